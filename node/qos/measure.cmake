# node/qos/ measuring half: io.stat/io.pressure reader, the per (pod, volume)
# usage window, the IO stall detector, the sampler that turns them into
# metrics and pod events.
# Included from the top-level CMakeLists.txt after node/; a library of its own so that gantryctl's
# tests, the fuzz target and the node plugin link the same code.
add_library(gantry_qos_measure STATIC
  ${CMAKE_CURRENT_LIST_DIR}/io_usage.c
  ${CMAKE_CURRENT_LIST_DIR}/usage_window.c
  ${CMAKE_CURRENT_LIST_DIR}/usage_sampler.c
  ${CMAKE_CURRENT_LIST_DIR}/usage_targets.c
  ${CMAKE_CURRENT_LIST_DIR}/io_stall.c
)
target_include_directories(gantry_qos_measure PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gantry_qos_measure PUBLIC gantry_common Threads::Threads)

# The pod events go through the project's Kubernetes client (optional at
# run time: without API access they are log lines).
add_library(gantry_qos_events STATIC ${CMAKE_CURRENT_LIST_DIR}/pod_event.c
  ${CMAKE_CURRENT_LIST_DIR}/stall_cause.c ${CMAKE_CURRENT_LIST_DIR}/usage_service.c)
target_include_directories(gantry_qos_events PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(gantry_qos_events PUBLIC gantry_qos_measure gantry_kube)

# The sampler walks the enforcement side's caps (qos.h, library
# gantry_node_qos) when that side is in the tree; else its own table
# (usage_targets.c), which nothing fills: the metrics then stay empty.
if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/qos.h AND TARGET gantry_node_qos)
  target_sources(gantry_qos_events PRIVATE ${CMAKE_CURRENT_LIST_DIR}/usage_qos_source.c)
  target_compile_definitions(gantry_qos_events PRIVATE GANTRY_USAGE_FROM_QOS=1)
  target_link_libraries(gantry_qos_events PUBLIC gantry_node_qos)
endif()

# The node service starts the loop (node.c: gantry_usage_service_start).
target_link_libraries(gantry_node PUBLIC gantry_qos_events)
