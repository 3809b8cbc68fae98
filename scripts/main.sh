#!/usr/bin/env bash
# The main job: installs what is missing, builds, runs the flagship example and a short benchmark.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
build=${SYMFLOW_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)" --target seed bench_elementwise
echo "== seed example"
"$build/examples/seed"
echo "== W1/W2 elementwise benchmark (short run)"
"$build/bench/bench_elementwise" --benchmark_min_time=0.2 --benchmark_filter='BM_W[12]/'
