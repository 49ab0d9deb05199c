# target_sources(iris_inference PRIVATE ...) for preprocessing and positions
target_sources(iris_inference PRIVATE
    image_preprocess.cpp image_positions.cpp ../sha256.cpp)
