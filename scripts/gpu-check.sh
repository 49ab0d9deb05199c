#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU and the CUDA toolkit but none of Iris's other
# dependencies (no Qt, OpenCV or Debian packages), build base/, kernels/ and the model core
# (inference/models_library.cmake) with their tests (IRIS_KERNELS_ONLY), run the CUDA tests (the
# kernels, then whole tiny models on the CUDA backend against the CPU backend), run them again
# under compute-sanitizer, and time the kernels against the GPU's memory bandwidth and tensor
# cores (iris_cuda_bench).
#
#   scripts/gpu-check.sh --pack                 # here, first: GoogleTest's sources to .gpu-check/
#   scripts/gpu-check.sh [PHASE] [--out DIR]    # on the GPU machine, in a copy of the repository
#
# PHASE: build, test, sanitize, bench, or all (the default; each phase builds first if needed).
# A lent machine runs one command for at most 10 minutes, so a check can go phase by phase: the
# build directory (build/gpu-check) stays between calls while the machine is warm. .gpu-check/ is
# ignored by git: name it in the device call's `carry`. Logs go to DIR (default
# build/gpu-check/out): gpu-check.log, one log per sanitizer tool, cuda-bench.txt. Exit status 0
# when every phase run passed; a skipped CUDA test counts as a failure here, where a GPU must be.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pack_dir="$root/.gpu-check"
build="$root/build/gpu-check"

if [[ "${1:-}" == "--pack" ]]; then
    rm -rf "$pack_dir" && mkdir -p "$pack_dir"
    cp -r /usr/src/googletest "$pack_dir/googletest"
    echo "GoogleTest sources in $pack_dir; carry that folder to the GPU machine"
    exit 0
fi
phase=all
out="$build/out"
while [[ $# -gt 0 ]]; do
    case "$1" in
        build | test | sanitize | bench | all) phase=$1 ;;
        --out) out=$2 && shift ;;
        *) echo "usage: scripts/gpu-check.sh [--pack | build|test|sanitize|bench|all] [--out DIR]" >&2
           exit 2 ;;
    esac
    shift
done
mkdir -p "$out"
log="$out/gpu-check.log"
export PATH="$PATH:/usr/local/cuda/bin"
tests="$build/tests/kernels_only/kernels/iris_kernels_tests"
models="$build/tests/kernels_only/iris_models_tests"
bench="$build/tests/kernels_only/bench_cuda/iris_cuda_bench"
status=0
say() { echo "$*" | tee -a "$log"; }

build() {
    say "== $(date -u +%FT%TZ) build of $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
    { nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv \
          || echo "nvidia-smi: not available"
      nvcc --version | tail -2 || echo "nvcc: not found"
      cmake --version | head -1; } 2>&1 | tee -a "$log"
    local generator=() gtest=()
    command -v ninja > /dev/null && generator=(-G Ninja)
    [[ -d "$pack_dir/googletest" ]] && gtest=(-DIRIS_GTEST_SOURCE_DIR="$pack_dir/googletest")
    cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DIRIS_KERNELS_ONLY=ON -DIRIS_CUDA=ON "${gtest[@]}" > "$out/configure.log" 2>&1 \
        || { say "configure failed:"; tail -20 "$out/configure.log" | tee -a "$log"; return 1; }
    cmake --build "$build" --parallel "$(nproc)" > "$out/build.log" 2>&1 \
        || { say "build failed:"; grep -E "error|FAILED" "$out/build.log" | head -30 | tee -a "$log"; return 1; }
    grep -E "^/.*(kernels|base|inference|tests)/.*warning|spill" "$out/build.log" | tee -a "$log" || true
    say "build: ok"
}

run_tests() {
    say "== CUDA tests"
    "$tests" --gtest_filter='*Cuda*:QuantUnits*' --gtest_brief=1 > "$out/tests.log" 2>&1
    local rc=$?
    grep -E "FAILED|Failure|SKIPPED|PASSED|error" "$out/tests.log" | head -60 | tee -a "$log"
    say "== whole models: CUDA backend against the CPU backend"
    "$models" --gtest_filter='*Cuda*:*Seam*:StepPlan*' --gtest_brief=1 > "$out/models.log" 2>&1
    local models_rc=$?
    grep -E "FAILED|Failure|SKIPPED|PASSED|error|Expected|Which is" "$out/models.log" | head -60 \
        | tee -a "$log"
    if [[ $rc != 0 || $models_rc != 0 ]] || grep -q "SKIPPED" "$out/tests.log" "$out/models.log"; then
        return 1
    fi
}

sanitize() {
    if ! command -v compute-sanitizer > /dev/null; then
        say "compute-sanitizer: not found (it comes with the CUDA toolkit); not run"
        return 1
    fi
    local rc=0 tool
    for tool in memcheck racecheck; do
        say "== compute-sanitizer --tool $tool (full output: sanitizer-$tool.log)"
        timeout 240 compute-sanitizer --tool "$tool" --error-exitcode 3 "$tests" \
            --gtest_filter='*Cuda*' --gtest_brief=1 > "$out/sanitizer-$tool.log" 2>&1 || rc=1
        tail -3 "$out/sanitizer-$tool.log" | tee -a "$log"
        timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 3 "$models" \
            --gtest_filter='*Cuda*' --gtest_brief=1 > "$out/sanitizer-$tool-models.log" 2>&1 || rc=1
        tail -3 "$out/sanitizer-$tool-models.log" | tee -a "$log"
    done
    return $rc
}

run_bench() {
    say "== decode products against the memory bandwidth, prefill products"
    "$bench" > "$out/cuda-bench.txt" 2>&1
    local rc=$?
    tee -a "$log" < "$out/cuda-bench.txt"
    return $rc
}

if [[ $phase == build || $phase == all || ! -x "$tests" ]]; then build || { say "== GPU check: FAILED (build)"; exit 1; }; fi
case $phase in
    test) run_tests || status=1 ;;
    sanitize) sanitize || status=1 ;;
    bench) run_bench || status=1 ;;
    all) run_tests || status=1; sanitize || status=1; run_bench || status=1 ;;
esac
say "== GPU check ($phase): $([[ $status == 0 ]] && echo passed || echo FAILED)"
exit $status
