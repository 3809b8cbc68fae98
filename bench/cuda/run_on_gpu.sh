#!/usr/bin/env bash
# Runs the CUDA backend's checks and benchmarks on a GPU machine, with binaries built elsewhere:
# the GPU test suite, compute-sanitizer memcheck of it, the W1/W2 and W3/W4 benchmarks, a per-kernel
# profile of one W4 step (Nsight Compute), and W1-W4 in PyTorch and JAX. Logs go to ${OUT:-./gpu-run}.
#
#   SYMFLOW_CUDA_BUILD  where the binaries are: a build of the main project (build-cuda), of cuda/
#                       alone, or a folder holding cuda_test, bench_cuda_* (and lib/) side by side
#   PARTS               any of: tests memcheck bench profile frameworks (default: all)
#   MEMCHECK_FILTER     gtest filter for the memcheck run (default: every test)
#   FRAMEWORKS          workloads for frameworks.py (default: W1 W2 W3 W4)
#   REPS                Google Benchmark repetitions (default 8)
#   PROFILE_SPECS       W4 steps to profile (default: 256,graph 256,tf32,graph 4096,graph 4096,tf32,graph)
#   NCU_FLAGS           extra Nsight Compute flags (default: measure at the card's own clocks and caches)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${SYMFLOW_CUDA_BUILD:-$root/build-cuda}
out=${OUT:-$root/gpu-run}
parts=${PARTS:-tests memcheck bench profile frameworks}
mkdir -p "$out"
export LD_LIBRARY_PATH="$build/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
find_binary() {
  for p in "$build/cuda/tests/$1" "$build/cuda/bench/$1" "$build/tests/$1" "$build/bench/$1" "$build/$1"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  echo "missing:$1"
}
has() { [[ " $parts " == *" $1 "* ]]; }
tests=$(find_binary cuda_test)
bench_elementwise=$(find_binary bench_cuda_elementwise)
bench_training=$(find_binary bench_cuda_training)
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
  nvcc --version | tail -1
} 2>&1 | tee "$out/device.txt"

if has tests; then
  echo "== GPU test suite"
  "$tests" --gtest_output="xml:$out/cuda_test.xml" > "$out/cuda_test.log" 2>&1
  echo "cuda_test exit $?"
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure|error" "$out/cuda_test.log" | head -40
  tail -3 "$out/cuda_test.log"
fi

if has memcheck; then
  echo "== compute-sanitizer memcheck (${MEMCHECK_FILTER:-*})"
  timeout ${MEMCHECK_TIMEOUT:-300} compute-sanitizer --tool memcheck --leak-check full "$tests" --gtest_brief=1 \
    --gtest_filter="${MEMCHECK_FILTER:-*}" > "$out/memcheck.log" 2>&1
  echo "memcheck exit $?"
  grep -E "ERROR SUMMARY|LEAK SUMMARY|Invalid|PASSED|FAILED" "$out/memcheck.log" | head -20
fi

if has bench; then
  for b in "$bench_elementwise" "$bench_training"; do
    name=$(basename "$b")
    echo "== $name"
    "$b" --benchmark_repetitions=${REPS:-8} --benchmark_report_aggregates_only=true \
      --benchmark_out="$out/$name.json" --benchmark_out_format=json > "$out/$name.log" 2>&1
    echo "$name exit $?"
    grep -E "^check|_median|^device" "$out/$name.log"
  done
fi

if has profile; then
  # The backend's own per-group profile (CUDA events) of ten uncaptured W4 steps.
  for batch in 256 4096; do
    echo "== symflow kernel profile: W4, batch $batch"
    timeout 120 "$bench_training" --kernel-profile=$batch > "$out/kernel_profile_w4_$batch.txt" 2>&1
    head -16 "$out/kernel_profile_w4_$batch.txt"
  done
  # Per-kernel GPU time of one W4 step (kernels run one at a time under the profiler, so their sum
  # leaves out the launch gaps that the benchmark's graph replays include).
  for spec in ${PROFILE_SPECS:-256,graph 256,tf32,graph 4096,graph 4096,tf32,graph}; do
    echo "== ncu: one W4 step ($spec)"
    timeout 120 ncu --profile-from-start off ${NCU_FLAGS:---cache-control none --clock-control none} \
      --metrics gpu__time_duration.sum --csv \
      "$bench_training" --profile-step="$spec" > "$out/ncu_w4_${spec//,/_}.csv" 2> "$out/ncu_w4_${spec//,/_}.err"
    python3 - "$out/ncu_w4_${spec//,/_}.csv" <<'EOF'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    print("no ncu rows"); sys.exit()
head, body = rows[0], rows[1:]
k, v, u = head.index("Kernel Name"), head.index("Metric Value"), head.index("Metric Unit")
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
by = collections.defaultdict(lambda: [0, 0.0])
for r in body:
    name = r[k].split("(")[0].split("<")[0][:60]
    by[name][0] += 1
    by[name][1] += float(r[v].replace(",", "")) * scale.get(r[u], 1.0)
total = sum(t for _, t in by.values())
print(f"{len(body)} kernels, {total:.1f} us of kernel time")
for name, (n, t) in sorted(by.items(), key=lambda x: -x[1][1]):
    print(f"  {n:3d} x {name:60s} {t:8.1f} us")
EOF
  done
fi

if has frameworks; then
  echo "== PyTorch / JAX (${FRAMEWORKS:-W1 W2 W3 W4})"
  XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1 timeout ${FRAMEWORKS_TIMEOUT:-450} python3 "$root/bench/cuda/frameworks.py" \
    ${FRAMEWORKS:-W1 W2 W3 W4} > "$out/frameworks.log" 2>&1
  echo "frameworks exit $?"
  grep -E " ms |error|failed" "$out/frameworks.log" | grep -v '^ *"' | head -60
fi
