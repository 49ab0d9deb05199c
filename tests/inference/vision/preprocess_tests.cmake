# iris_add_test(...) for preprocessing and positions
find_package(OpenCV 4 REQUIRED COMPONENTS core imgcodecs)
iris_add_test(iris_vision_preprocess_tests
    SOURCES image_preprocess_test.cpp engine_image_test.cpp tiny_mmproj.cpp
    LIBS iris_inference iris_test_models GTest::gtest_main opencv_core opencv_imgcodecs)

# The files the command-line tests of images use (tests/app/CMakeLists.txt).
add_executable(iris_make_vision_fixture make_vision_fixture.cpp tiny_mmproj.cpp)
iris_target_defaults(iris_make_vision_fixture)
target_link_libraries(iris_make_vision_fixture PRIVATE iris_test_models opencv_core opencv_imgcodecs)
set(IRIS_VISION_FIXTURE "${CMAKE_CURRENT_BINARY_DIR}/fixture")
add_test(NAME Tools.MakeVisionFixture
         COMMAND iris_make_vision_fixture "${IRIS_VISION_FIXTURE}")
set_tests_properties(Tools.MakeVisionFixture PROPERTIES FIXTURES_SETUP vision_fixture)

# LocalEngineClient with images (needs the projector maker above).
iris_add_test(iris_vision_client_tests
    SOURCES local_engine_client_image_test.cpp tiny_mmproj.cpp
    LIBS iris_agent_clients iris_test_models GTest::gtest_main opencv_core opencv_imgcodecs)
