# iris_add_test(<name> SOURCES ... LIBS ...): an executable whose gtest cases become ctest tests
# named <Suite>.<Case>. Tests that need Qt run headless: their main() picks the offscreen platform
# (tests/app/qt_test_main.cpp, tests/qt_webengine_test_main.cpp), which also works when the test
# executable is run by hand.
function(iris_add_test name)
    cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
    add_executable(${name} ${ARG_SOURCES})
    iris_target_defaults(${name})
    target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock)
    target_compile_definitions(${name} PRIVATE
        IRIS_SOURCE_ROOT="${IRIS_SOURCE_ROOT}" IRIS_TEST_ARTIFACTS="${IRIS_TEST_ARTIFACTS}")
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()
