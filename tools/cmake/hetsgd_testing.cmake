# hetsgd_add_test(name LABEL label SOURCES ...): one GoogleTest binary, tests discovered by ctest.
include(GoogleTest)
function(hetsgd_add_test name)
  cmake_parse_arguments(arg "" "LABEL" "SOURCES" ${ARGN})
  add_executable(${name} ${arg_SOURCES})
  target_link_libraries(${name} PRIVATE hetsgd::hetsgd hetsgd_test_common GTest::gtest_main
                                        hetsgd_options)
  if(HETSGD_WITH_CUDA)
    # Tests reach the backend's internals: they link it instead of loading the module.
    target_link_libraries(${name} PRIVATE hetsgd_cuda_linked)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS ${arg_LABEL}
                       SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]"
                       DISCOVERY_TIMEOUT 60)
endfunction()
