#!/usr/bin/env bash
# The test command: installs what is missing, builds everything and runs the whole suite with ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
build=${SYMFLOW_BUILD_DIR:-$root/build}
jobs=${SYMFLOW_JOBS:-$(nproc)}
# SYMFLOW_SANITIZER_JOB: the sanitizer subset is built too (in $build/sanitize, with ASan + UBSan and
# another SIMD width than -march=native) and run by the same ctest, as entries named sanitize.*.
# SYMFLOW_NATIVE_TOOLS: the command-line tool is built for this machine, against the op tables the
# tests use, instead of a second, x86-64-v2 copy of the tool's libraries (five of the build's
# heaviest units; the sanitizer job already compiles everything for another instruction set).
# SYMFLOW_NATIVE_TOOLS=OFF builds the portable tool, as an install does, and checks its instructions.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSYMFLOW_SANITIZER_JOB=${SYMFLOW_SANITIZER_JOB:-ON} \
  -DSYMFLOW_NATIVE_TOOLS=${SYMFLOW_NATIVE_TOOLS:-ON}
cmake --build "$build" -j "$jobs"
cd "$build"
# ctest runs several test programs at once, each with OpenMP threads: more threads than cores. Busy-
# waiting threads then hold cores a descheduled peer needs to reach the barrier, and multi-threaded
# tests slow down many times over; passive waiting yields the core instead.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
ctest --output-on-failure -j "$jobs" "$@"
