#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU and the CUDA toolkit but none of Iris's other
# dependencies (no Qt, OpenCV or Debian packages), build base/ and kernels/ with their tests
# (IRIS_KERNELS_ONLY), run the CUDA tests, run them again under compute-sanitizer, and time the
# decode products against the GPU's memory bandwidth (iris_cuda_bench). About 5 minutes.
#
#   scripts/gpu-check.sh --pack           # here, first: copies GoogleTest's sources to .gpu-check/
#   scripts/gpu-check.sh [--out DIR]      # on the GPU machine, in a copy of the repository
#
# The log and the benchmark table go to DIR (default build/gpu-check/out). Exit status: 0 when
# every CUDA test passed (skips count as failures here: this script runs where a GPU must be).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pack_dir="$root/.gpu-check"

if [[ "${1:-}" == "--pack" ]]; then
    rm -rf "$pack_dir" && mkdir -p "$pack_dir"
    cp -r /usr/src/googletest "$pack_dir/googletest"
    echo "GoogleTest sources in $pack_dir; carry that folder to the GPU machine"
    exit 0
fi
out="$root/build/gpu-check/out"
if [[ "${1:-}" == "--out" ]]; then out=$2; fi
mkdir -p "$out"
build="$root/build/gpu-check"
export PATH="$PATH:/usr/local/cuda/bin"

{
    echo "== $(date -u +%FT%TZ) GPU check of $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
    nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv \
        || echo "nvidia-smi: not available"
    nvcc --version | tail -2 || echo "nvcc: not found"
} 2>&1 | tee "$out/gpu-check.log"

generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
gtest=()
[[ -d "$pack_dir/googletest" ]] && gtest=(-DIRIS_GTEST_SOURCE_DIR="$pack_dir/googletest")
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DIRIS_KERNELS_ONLY=ON \
    -DIRIS_CUDA=ON "${gtest[@]}" 2>&1 | tail -3 | tee -a "$out/gpu-check.log"
cmake --build "$build" --parallel "$(nproc)" 2>&1 | grep -E "^/.*(kernels|base|tests)/.*(warning|error)|spill|FAILED" \
    | tee -a "$out/gpu-check.log" || true
test -x "$build/tests/kernels_only/kernels/iris_kernels_tests" || { echo "build failed" | tee -a "$out/gpu-check.log"; exit 1; }

tests="$build/tests/kernels_only/kernels/iris_kernels_tests"
status=0
echo "== CUDA tests" | tee -a "$out/gpu-check.log"
"$tests" --gtest_filter='*Cuda*' --gtest_brief=1 2>&1 | tee -a "$out/gpu-check.log" || status=1
if grep -q "SKIPPED" "$out/gpu-check.log"; then status=1; fi
echo "== the CUDA tests under compute-sanitizer (memcheck, then racecheck)" | tee -a "$out/gpu-check.log"
if ! command -v compute-sanitizer > /dev/null; then
    echo "compute-sanitizer: not found (it comes with the CUDA toolkit); not run" | tee -a "$out/gpu-check.log"
    status=1
fi
for tool in memcheck racecheck; do
    command -v compute-sanitizer > /dev/null || break
    compute-sanitizer --tool "$tool" --error-exitcode 3 "$tests" --gtest_filter='*Cuda*' \
        --gtest_brief=1 2>&1 | tail -4 | tee -a "$out/gpu-check.log" || status=1
done
echo "== decode products against the memory bandwidth" | tee -a "$out/gpu-check.log"
"$build/tests/kernels_only/bench_cuda/iris_cuda_bench" 2>&1 | tee "$out/cuda-bench.txt" | tee -a "$out/gpu-check.log" \
    || status=1
echo "== GPU check: $([[ $status == 0 ]] && echo passed || echo FAILED)" | tee -a "$out/gpu-check.log"
exit $status
