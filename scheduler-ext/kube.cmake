# The Kubernetes API client of gantry-scheduler (kube_*.c): kubeconfig and
# in-cluster config, informers (list + watch), pod binding. A library of its
# own so that the extender, its tests and the fuzz target link the same code.
add_library(gantry_kube STATIC
  ${CMAKE_CURRENT_LIST_DIR}/kube_client.c
  ${CMAKE_CURRENT_LIST_DIR}/kube_config.c
  ${CMAKE_CURRENT_LIST_DIR}/kube_http.c
  ${CMAKE_CURRENT_LIST_DIR}/kube_informer.c
  ${CMAKE_CURRENT_LIST_DIR}/kube_list_ahead.c
  ${CMAKE_CURRENT_LIST_DIR}/kube_watch_decode.c
)
target_include_directories(gantry_kube PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_compile_definitions(gantry_kube PRIVATE GANTRY_VERSION="${GANTRY_VERSION}")
target_link_libraries(gantry_kube PUBLIC gantry_common PkgConfig::CURL PkgConfig::JANSSON
                      PkgConfig::YAML Threads::Threads)
