# iris_add_test(...) for VisionModel and its towers
iris_add_test(iris_vision_tower_tests
    SOURCES qwen25vl_vision_test.cpp tiny_mmproj.cpp
    LIBS iris_inference GTest::gtest_main)
