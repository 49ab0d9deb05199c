# IRIS_CUDA = AUTO | ON | OFF decides whether kernels/cuda/ is compiled.
# Result: IRIS_HAVE_CUDA (bool). With it off nothing about the CPU build changes.

set(IRIS_HAVE_CUDA OFF)
string(TOUPPER "${IRIS_CUDA}" _iris_cuda)

if(NOT _iris_cuda STREQUAL "OFF")
    # Debian's CUDA toolkit lives outside PATH; look there before giving up.
    if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS "/usr/local/cuda/bin/nvcc")
        set(CMAKE_CUDA_COMPILER "/usr/local/cuda/bin/nvcc" CACHE FILEPATH "CUDA compiler")
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
        set(CMAKE_CUDA_ARCHITECTURES "${IRIS_CUDA_ARCHITECTURES}")
        enable_language(CUDA)
        # C++20 as everywhere in Iris (the kernels share headers such as the quantisation
        # blocks with the CPU code). CMake 3.25 does not know nvcc's C++20 flag (nvcc 12+ has
        # it), so it is told here.
        set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
        set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
        set(CMAKE_CUDA_STANDARD 20)
        set(CMAKE_CUDA_STANDARD_REQUIRED ON)
        find_package(CUDAToolkit REQUIRED)
        set(IRIS_HAVE_CUDA ON)
        message(STATUS "Iris: CUDA kernels ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                       "architectures ${CMAKE_CUDA_ARCHITECTURES})")
    elseif(_iris_cuda STREQUAL "ON")
        message(FATAL_ERROR "IRIS_CUDA=ON but no CUDA compiler was found "
                            "(set CUDACXX or CMAKE_CUDA_COMPILER to nvcc)")
    else()
        message(STATUS "Iris: CUDA kernels OFF (no nvcc found)")
    endif()
else()
    message(STATUS "Iris: CUDA kernels OFF (IRIS_CUDA=OFF)")
endif()
