# zz_secret_canary: after every other test (DEPENDS on all of them, so it
# runs last even under -j), searches the logs the tests kept
# (<build>/test-logs, canary.keep_log), CTest's own record of every
# test's output (Testing/Temporary/LastTest*.log*) and the daemons' logs of
# the real control plane (<build>/k8s-runs/*/*.log) for the canary and the
# registered secret values (tests/canary/canary.py). Included at the end of
# the top-level CMakeLists.txt: the tests of every folder exist by then.
function(_gantry_tests_under dir out)
  get_property(tests DIRECTORY ${dir} PROPERTY TESTS)
  get_property(subs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(s ${subs})
    _gantry_tests_under(${s} more)
    list(APPEND tests ${more})
  endforeach()
  set(${out} ${tests} PARENT_SCOPE)
endfunction()

_gantry_tests_under(${PROJECT_SOURCE_DIR} _gantry_all_tests)
add_test(NAME zz_secret_canary
         COMMAND ${GANTRY_PYTHON} ${PROJECT_SOURCE_DIR}/tests/canary/check_canary.py
                 --logs ${CMAKE_BINARY_DIR}/test-logs
                 --logs ${CMAKE_BINARY_DIR}/Testing/Temporary
                 --log-dir ${CMAKE_BINARY_DIR}/k8s-runs
                 --values ${CMAKE_BINARY_DIR}/test-secret-values)
set_tests_properties(zz_secret_canary PROPERTIES LABELS canary TIMEOUT 300
  DEPENDS "${_gantry_all_tests}")
