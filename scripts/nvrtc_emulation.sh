#!/bin/sh
# Runs the NVRTC graph runner's GPU path on the host (tests/cuda/nvrtc_emulation.cpp): the generated
# kernels compiled by the host compiler, a fake CUDA runtime and cuBLAS, results against the CPU
# interpreter. Needs NVRTC (generated sources are still compiled to PTX, which maps them to kernels),
# Eigen and nlohmann-json; no GPU, no nvcc. Usage: scripts/nvrtc_emulation.sh [work dir]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
work=${1:-$(mktemp -d)}
mkdir -p "$work"
cd "$work"
flags="-std=gnu++20 -O1 -fopenmp -I$root/include -I$root/cuda/include -I$cuda/include $(pkg-config --cflags eigen3)"
libs="-L$cuda/lib64 -Wl,-rpath,$cuda/lib64 -lnvrtc -ldl -lrt -lpthread"
# shellcheck disable=SC2086
c++ $flags -c "$root/tests/cuda/nvrtc_emulation.cpp" -o phase1.o
# shellcheck disable=SC2086
c++ -fopenmp phase1.o -o phase1 $libs -lcublas -lcudart_static
./phase1  # writes kernels.inc
# shellcheck disable=SC2086
c++ $flags -DPHASE2 -I. -c "$root/tests/cuda/nvrtc_emulation.cpp" -o phase2.o
# shellcheck disable=SC2086
c++ -fopenmp phase2.o -o phase2 $libs
./phase2
