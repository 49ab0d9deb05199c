# Compiler settings shared by every Iris target. Warnings apply to Iris's own code only:
# third-party headers come in through imported targets as system includes.

set(IRIS_WARNINGS
    -Wall -Wextra -Wpedantic
    -Wshadow -Wconversion -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual
    -Wcast-align -Wnull-dereference -Wdouble-promotion -Wformat=2
    -Wimplicit-fallthrough -Wmisleading-indentation -Wunused)

# GCC 12 at -O2/-O3 reports std::string concatenation as overlapping memcpy (GCC bug 105651):
# a false positive in libstdc++'s own code that would otherwise bury real warnings.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    list(APPEND IRIS_WARNINGS -Wno-restrict)
endif()

if(IRIS_SANITIZE)
    set(IRIS_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
        -fno-sanitize-recover=undefined)
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${IRIS_SANITIZE_FLAGS}>")
    add_link_options(${IRIS_SANITIZE_FLAGS})
endif()

if(IRIS_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
        message(FATAL_ERROR "IRIS_FUZZ needs clang (libFuzzer); use the fuzz preset")
    endif()
    set(IRIS_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${IRIS_FUZZ_FLAGS}>")
    add_link_options(-fsanitize=address,undefined)
endif()

if(IRIS_NATIVE)
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-march=native>")
endif()

# Assertions stay on in Debug and RelWithDebInfo; Release defines NDEBUG as usual.

# iris_target_defaults(<target>): warnings, include root and C++ standard for an Iris target.
function(iris_target_defaults target)
    target_compile_features(${target} PUBLIC cxx_std_20)
    target_include_directories(${target} PUBLIC "${IRIS_SOURCE_ROOT}")
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${IRIS_WARNINGS}>")
    if(IRIS_WERROR)
        target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Werror>")
    endif()
endfunction()

# iris_qt_strict(<target>): Qt's strict mode for Iris's Qt code: no implicit const char*
# conversions to QString, no context-less connects, no narrowing in signal connections.
function(iris_qt_strict target)
    target_compile_definitions(${target} PRIVATE
        QT_NO_CAST_FROM_ASCII QT_NO_CAST_TO_ASCII QT_NO_URL_CAST_FROM_STRING
        QT_NO_NARROWING_CONVERSIONS_IN_CONNECT QT_NO_CONTEXTLESS_CONNECT QT_NO_KEYWORDS
        QT_USE_QSTRINGBUILDER)
endfunction()
