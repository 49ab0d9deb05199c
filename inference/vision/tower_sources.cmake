# target_sources(iris_inference PRIVATE ...) for VisionModel and its towers
target_sources(iris_inference PRIVATE vision_model.cpp qwen25vl_vision.cpp)
