#!/bin/sh
# Remakes the vision fixtures in ../fixtures with llama.cpp's libmtmd (see ../README.md). Needs an
# Iris build with the iris_make_vision_parity_models target and a llama.cpp build with libllama
# and libmtmd (any target that links them, e.g. llama-mtmd-cli).
#   IRIS_BUILD=build/dev LLAMA_SRC=../llama.cpp LLAMA_BUILD=../llama-build \
#       tests/inference/llama_cpp/tools/make_vision_fixtures.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
IRIS_BUILD=$(cd "${IRIS_BUILD:?the Iris build folder}" && pwd)
LLAMA_SRC=$(cd "${LLAMA_SRC:?the llama.cpp checkout}" && pwd)
LLAMA_BUILD=$(cd "${LLAMA_BUILD:?the llama.cpp build folder}" && pwd)
WORK=${WORK:-$(mktemp -d)}
OUT="$HERE/../fixtures"
mkdir -p "$WORK" "$OUT"

# On CPUs with AVX512-FP16 a native build's f16 dot products (ggml_vec_dot_f16, which the patch
# embedding's f16 im2col uses) accumulate in f16: 1e-3 off. The fixtures come from a build without
# it (README.md); ALLOW_F16_ARITHMETIC=1 makes them anyway.
for lib in "$LLAMA_BUILD"/bin/libggml-cpu*.so; do
    if objdump -d "$lib" | grep -q 'vfmadd[0-9]*ph'; then
        echo "$lib computes in f16 (AVX512-FP16): configure llama.cpp as README.md says" >&2
        [ "${ALLOW_F16_ARITHMETIC:-0}" = 1 ] || exit 1
    fi
done

c++ -O2 -std=c++17 "$HERE/llama_vision_driver.cpp" -I"$LLAMA_SRC/include" \
    -I"$LLAMA_SRC/ggml/include" -I"$LLAMA_SRC/tools/mtmd" -L"$LLAMA_BUILD/bin" -lmtmd -lllama \
    -lggml -lggml-base -Wl,-rpath,"$LLAMA_BUILD/bin" -o "$WORK/llama_vision_driver"
DRIVER="$WORK/llama_vision_driver"
# The libraries' own run paths name the folder they were built in; these come first.
export LD_LIBRARY_PATH="$LLAMA_BUILD/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

"$IRIS_BUILD/tests/inference/llama_cpp/iris_make_vision_parity_models" "$WORK"
IMAGES="identity-168x140.png resize-150x125.png tie-70x98.png"

cd "$WORK"
"$DRIVER" qwen2vl-lm.gguf qwen2.5vl-mmproj.gguf $IMAGES > qwen2.5vl.embd.txt
"$DRIVER" minimax-m3-lm.gguf minimax-m3-mmproj.gguf $IMAGES > minimax-m3.embd.txt
sha256sum qwen2.5vl-mmproj.gguf minimax-m3-mmproj.gguf > "$OUT/vision-sources.sha256"
cp $IMAGES qwen2.5vl.embd.txt minimax-m3.embd.txt "$OUT/"
echo "vision fixtures written to $OUT (work files in $WORK)"
