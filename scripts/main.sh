#!/usr/bin/env bash
# The main job: installs what is missing (the Fashion-MNIST package included), builds, runs the seed
# example, then trains the MLP of examples/mlp.cpp on Fashion-MNIST end to end; the last line printed
# is its test accuracy (test_accuracy=0.XXXX, about 0.89 after 10 epochs).
#   --epochs N   epochs of MLP training (default 10: about 30 s of training on 2 cores)
#   --bench      also build and run the short W1/W2 elementwise benchmark
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
epochs=10
bench=0
while [ $# -gt 0 ]; do
  case "$1" in
    --epochs) epochs=$2; shift 2 ;;
    --bench) bench=1; shift ;;
    *) echo "usage: $0 [--epochs N] [--bench]" >&2; exit 2 ;;
  esac
done
"$root/scripts/install-deps.sh"
build=${SYMFLOW_BUILD_DIR:-$root/build}

# OpenMP threads wait for each other at every parallel loop; on a machine already busy a waiting
# thread may be descheduled for a whole time slice per loop (a 2-core VM under a load of 5 ran an
# MLP epoch 40x slower with 2 threads than with 1). So, unless OMP_NUM_THREADS is set, use only the
# cores the load average leaves idle, at least one. Measured before building, which adds load itself.
if [ -z "${OMP_NUM_THREADS:-}" ]; then
  cores=$(nproc)
  load=$(cut -d' ' -f1 /proc/loadavg)
  export OMP_NUM_THREADS=$(awk -v c="$cores" -v l="$load" 'BEGIN { t = int(c - l + 0.5); print (t < 1 ? 1 : t) }')
  echo "symflow: $cores cores, load average $load: training with OMP_NUM_THREADS=$OMP_NUM_THREADS"
fi

targets=(seed mlp)
[ "$bench" = 1 ] && targets+=(bench_elementwise)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
echo "== seed example"
"$build/examples/seed"
if [ "$bench" = 1 ]; then
  echo "== W1/W2 elementwise benchmark (short run)"
  "$build/bench/bench_elementwise" --benchmark_min_time=0.2 --benchmark_filter='BM_W[12]/'
fi
echo "== MLP (784-256-10) on Fashion-MNIST, $epochs epochs"
"$build/examples/mlp" --epochs "$epochs"
