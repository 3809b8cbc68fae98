// The emulated CUDA runtime (cuda/include/symflow/cuda/emulation/runtime_api.hpp), used as a CUDA
// program uses the real one, through <cuda_runtime.h> (cuda/emulation/include/): allocations start
// as poison, copies whose kind disagrees with where their pointers lie fail, a captured stream
// records kernels and copies and a graph launch replays them, events time, errors read back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

namespace emu = symflow::cuda::emulation;

namespace {

__global__ void scale_add(float* y, const float* x, float a, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * x[i] + y[i];
}

TEST(CudaEmulationRuntime, AllocationsStartAsPoison) {
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 37 * sizeof(float)), cudaSuccess);
  std::vector<float> h(37, 0.0f);
  ASSERT_EQ(cudaMemcpy(h.data(), d, 37 * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (float v : h) EXPECT_TRUE(std::isnan(v));
  std::uint32_t bits;
  std::memcpy(&bits, &h[0], 4);
  EXPECT_EQ(bits, 0xFFFFFFFFu);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST(CudaEmulationRuntime, CopiesAreCheckedAgainstTheirKindAndExtent) {
  float* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 8 * sizeof(float)), cudaSuccess);
  std::vector<float> h(16, 1.0f);
  EXPECT_EQ(cudaMemcpy(d, h.data(), 8 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(h.data(), d, 8 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);  // backwards
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read once
  EXPECT_EQ(cudaMemcpy(d, h.data(), 9 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);  // past the end
  EXPECT_EQ(cudaMemcpy(d + 4, h.data(), 4 * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);  // inside
  EXPECT_EQ(cudaMemset(d + 1, 0, 8 * sizeof(float)), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(h.data()), cudaErrorInvalidDevicePointer);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaErrorInvalidDevicePointer);  // twice
  (void)cudaGetLastError();
}

TEST(CudaEmulationRuntime, KernelsRunOnStreamsAgainstAHostReference) {
  const int n = 1000;  // not a multiple of the block
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = float(i) * 0.5f - 3;
    y[i] = float(i % 7);
  }
  float *dx, *dy;
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dy, n * sizeof(float));
  cudaMemcpyAsync(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice, s);
  emu::launch_on(s, "scale_add", &scale_add, dim3((n + 255) / 256), dim3(256), dy, dx, 2.0f, n);
  std::vector<float> out(n);
  cudaMemcpyAsync(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost, s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (int i = 0; i < n; ++i) EXPECT_EQ(out[i], 2.0f * x[i] + y[i]) << i;
  cudaFree(dx);
  cudaFree(dy);
  cudaStreamDestroy(s);
}

TEST(CudaEmulationRuntime, ACapturedGraphReplaysItsWork) {
  const int n = 64;
  std::vector<float> x(n, 1.0f), y(n, 0.0f), out(n);
  float *dx, *dy;
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dy, n * sizeof(float));
  cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaStream_t s;
  cudaStreamCreate(&s);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cudaStreamCaptureStatus status;
  cudaStreamIsCapturing(s, &status);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  emu::launch_on(s, "scale_add", &scale_add, dim3(1), dim3(64), dy, dx, 3.0f, n);  // recorded, not run
  emu::launch_on(s, "scale_add", &scale_add, dim3(1), dim3(64), dy, dx, 1.0f, n);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  (void)cudaGetLastError();
  cudaGraph_t g;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost);
  EXPECT_EQ(out[5], 0.0f);  // nothing ran during the capture
  std::size_t nodes = 0;
  cudaGraphGetNodes(g, nullptr, &nodes);
  EXPECT_EQ(nodes, 2u);
  cudaGraphExec_t exec;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  for (int replay = 1; replay <= 3; ++replay) {
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i) EXPECT_EQ(out[i], 4.0f * float(replay)) << "replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureUnmatched);
  (void)cudaGetLastError();
  cudaStreamDestroy(s);
  cudaFree(dx);
  cudaFree(dy);
}

TEST(CudaEmulationRuntime, AGraphAllocationIsPoisonAgainAtEveryReplay) {
  cudaStream_t s;
  cudaStreamCreate(&s);
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  float* scratch = nullptr;
  cudaMallocAsync(&scratch, 16 * sizeof(float), s);
  cudaMemsetAsync(scratch, 0, 8 * sizeof(float), s);  // half of it written
  cudaFreeAsync(scratch, s);
  cudaGraph_t g;
  cudaStreamEndCapture(s, &g);
  cudaGraphExec_t exec;
  cudaGraphInstantiate(&exec, g, 0);
  cudaGraphLaunch(exec, s);
  std::vector<float> h(16);
  cudaMemcpy(h.data(), scratch, 16 * sizeof(float), cudaMemcpyDeviceToHost);
  EXPECT_EQ(h[0], 0.0f);
  EXPECT_TRUE(std::isnan(h[15]));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

TEST(CudaEmulationRuntime, TheDeviceIsAnH100) {
  int count = 0, major = 0, sms = 0;
  cudaGetDeviceCount(&count);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(sms, 132);
  cudaDeviceProp p;
  EXPECT_EQ(cudaGetDeviceProperties(&p, 1), cudaErrorInvalidDevice);
  (void)cudaGetLastError();
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_EQ(p.warpSize, 32);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  cudaEventRecord(b);
  float ms = -1;
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_GE(ms, 0.0f);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
}

}  // namespace
