#!/bin/sh
# Remakes ../fixtures with llama.cpp (see ../README.md). Needs an Iris build with the
# iris_make_parity_models target and a llama.cpp build with llama-quantize and libllama.
#   IRIS_BUILD=build/dev LLAMA_SRC=../llama.cpp LLAMA_BUILD=../llama-build \
#       tests/inference/llama_cpp/tools/make_fixtures.sh
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
IRIS_BUILD=$(cd "${IRIS_BUILD:?the Iris build folder}" && pwd)
LLAMA_SRC=$(cd "${LLAMA_SRC:?the llama.cpp checkout}" && pwd)
LLAMA_BUILD=$(cd "${LLAMA_BUILD:?the llama.cpp build folder}" && pwd)
WORK=${WORK:-$(mktemp -d)}
OUT="$HERE/../fixtures"
mkdir -p "$WORK" "$OUT"

c++ -O2 -std=c++17 "$HERE/llama_parity_driver.cpp" -I"$LLAMA_SRC/include" \
    -I"$LLAMA_SRC/ggml/include" -L"$LLAMA_BUILD/bin" -lllama -lggml -lggml-base \
    -Wl,-rpath,"$LLAMA_BUILD/bin" -o "$WORK/llama_parity_driver"
DRIVER="$WORK/llama_parity_driver"

"$IRIS_BUILD/tests/inference/llama_cpp/iris_make_parity_models" "$WORK" > "$WORK/made.txt"
cat "$WORK/made.txt"
QWEN_IDS=$(sed -n 's/^qwen2 tokens: //p' "$WORK/made.txt")
M3_IDS=$(sed -n 's/^minimax-m3 tokens: //p' "$WORK/made.txt")

cd "$WORK"
"$LLAMA_BUILD/bin/llama-quantize" qwen2-f32.gguf qwen2-q4_k_m.gguf Q4_K_M 2 > quantize-q4_k_m.log 2>&1
"$LLAMA_BUILD/bin/llama-quantize" qwen2-f32.gguf qwen2-q8_0.gguf Q8_0 2 > quantize-q8_0.log 2>&1
for m in qwen2-q4_k_m qwen2-q8_0 qwen2-f32; do
    "$DRIVER" $m.gguf 8 f16 $QWEN_IDS > $m.logits.txt
done
"$DRIVER" minimax-m3-f32.gguf 8 f16 $M3_IDS > minimax-m3-f32.logits.txt
# makeM3Model's file as it is: llama.cpp refuses it (no tokenizer.ggml.model).
if "$DRIVER" minimax-m3-f32-no-tokenizer.gguf 0 f16 $M3_IDS > /dev/null 2> no-tokenizer.err; then
    echo "llama.cpp accepts makeM3Model's file without a tokenizer"
else
    grep "error loading model" no-tokenizer.err || true
fi
sha256sum qwen2-f32.gguf minimax-m3-f32.gguf > "$OUT/sources.sha256"
cp qwen2-q4_k_m.gguf qwen2-q8_0.gguf qwen2-q4_k_m.logits.txt qwen2-q8_0.logits.txt \
    qwen2-f32.logits.txt minimax-m3-f32.logits.txt "$OUT/"
echo "fixtures written to $OUT (work files in $WORK)"
