# iris_inference_models: GGUF files, the paged KV cache, the thread pool, the models and their
# backends: everything a forward pass needs and nothing it does not (no tokenizer, no images, no
# engine), so it depends on base/ and kernels/ only. iris_inference (CMakeLists.txt here) builds
# on it; the kernels-only build for GPU machines (tests/kernels_only/) includes this file alone
# to run whole models on CUDA where Qt, ICU and OpenCV are missing.
set(_iris_inference_dir "${CMAKE_CURRENT_LIST_DIR}")
add_library(iris_inference_models STATIC
    ${_iris_inference_dir}/mapped_file.cpp
    ${_iris_inference_dir}/gguf/gguf_value.cpp
    ${_iris_inference_dir}/gguf/gguf_file.cpp
    ${_iris_inference_dir}/gguf/gguf_writer.cpp
    ${_iris_inference_dir}/kv_cache.cpp
    ${_iris_inference_dir}/thread_pool.cpp
    ${_iris_inference_dir}/backend/cpu_backend.cpp
    ${_iris_inference_dir}/backend/cpu_sparse_attention.cpp
    ${_iris_inference_dir}/backend/cuda_backend.cpp
    ${_iris_inference_dir}/backend/device.cpp
    ${_iris_inference_dir}/backend/step_plan.cpp
    ${_iris_inference_dir}/models/model.cpp
    ${_iris_inference_dir}/models/gated_ffn.cpp
    ${_iris_inference_dir}/models/linear.cpp
    ${_iris_inference_dir}/models/mixture_of_experts.cpp
    ${_iris_inference_dir}/models/model_parts.cpp
    ${_iris_inference_dir}/models/rope_tables.cpp
    ${_iris_inference_dir}/models/tensor_binder.cpp
    ${_iris_inference_dir}/models/decoder.cpp
    ${_iris_inference_dir}/models/qwen2.cpp
    ${_iris_inference_dir}/models/qwen2vl.cpp
    ${_iris_inference_dir}/models/qwen3.cpp
    ${_iris_inference_dir}/models/minimax_m3.cpp
    ${_iris_inference_dir}/models/minimax_m3_model.cpp)
iris_target_defaults(iris_inference_models)
target_link_libraries(iris_inference_models PUBLIC iris_base iris_kernels)
