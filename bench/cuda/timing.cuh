#pragma once
// What the GPU benchmarks share (elementwise.cu, training.cu, training_w3.cu): a device-side random
// fill and timing with CUDA events. Each translation unit has its own copy (an unnamed namespace: the
// kernels are compiled without relocatable device code).
#include <benchmark/benchmark.h>

#include <cstddef>

#include <symflow/cuda.hpp>

namespace {
using namespace symflow;
constexpr int launches = 20;

__global__ void random_fill(float* p, std::size_t n, unsigned seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ (seed * 0x9E3779B9u);
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    p[i] = lo + (hi - lo) * float(x) * (1.0f / 4294967296.0f);
  }
}

// Times `launches` back-to-back calls of `run` on `stream` per iteration and reports one call.
template <class F>
void time_launches(benchmark::State& state, cudaStream_t stream, F&& run) {
  cudaEvent_t start{}, stop{};
  SYMFLOW_CUDA_CHECK(cudaEventCreate(&start));
  SYMFLOW_CUDA_CHECK(cudaEventCreate(&stop));
  run();  // warm-up (module load, first allocations)
  SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (auto _ : state) {
    SYMFLOW_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int k = 0; k < launches; ++k) run();
    SYMFLOW_CUDA_CHECK(cudaEventRecord(stop, stream));
    SYMFLOW_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SYMFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(double(ms) / 1e3 / launches);
  }
  SYMFLOW_CUDA_CHECK(cudaGetLastError());
  SYMFLOW_CUDA_CHECK(cudaEventDestroy(start));
  SYMFLOW_CUDA_CHECK(cudaEventDestroy(stop));
  state.SetLabel(cuda::device_description());
}
}  // namespace
