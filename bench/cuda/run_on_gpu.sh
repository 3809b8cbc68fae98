#!/usr/bin/env bash
# Runs the CUDA backend's checks and benchmarks on a GPU machine, with binaries built elsewhere
# (cmake --build build-cuda): the GPU test suite, compute-sanitizer memcheck of it, the W1/W2
# benchmark, and W1/W2 in PyTorch and JAX. Logs go to ${OUT:-./gpu-run}.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${SYMFLOW_CUDA_BUILD:-$root/build-cuda}
out=${OUT:-$root/gpu-run}
mkdir -p "$out"
export LD_LIBRARY_PATH="$build/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
tests="$build/cuda/tests/cuda_test"
bench="$build/cuda/bench/bench_cuda_elementwise"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  nvcc --version | tail -1
} 2>&1 | tee "$out/device.txt"

echo "== GPU test suite"
"$tests" --gtest_output="xml:$out/cuda_test.xml" 2>&1 | tee "$out/cuda_test.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |FAILED|Failure|error" | head -60
tail -4 "$out/cuda_test.log"

if [ "${SKIP_SANITIZER:-0}" != 1 ]; then
  echo "== compute-sanitizer memcheck"
  timeout 300 compute-sanitizer --tool memcheck --leak-check full "$tests" --gtest_brief=1 > "$out/memcheck.log" 2>&1
  echo "memcheck exit $?"
  grep -E "ERROR SUMMARY|LEAK SUMMARY|Invalid|PASSED|FAILED" "$out/memcheck.log" | head -20
fi

if [ "${SKIP_BENCH:-0}" != 1 ]; then
  echo "== bench_cuda_elementwise"
  "$bench" --benchmark_repetitions=${REPS:-10} --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/bench_cuda.json" --benchmark_out_format=json 2>&1 | tee "$out/bench_cuda.log" | grep -v "^\*\*\*"
  echo "== PyTorch / JAX"
  XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1 timeout 400 python3 "$root/bench/cuda/frameworks.py" 2>&1 \
    | tee "$out/frameworks.log" | tail -16
fi
