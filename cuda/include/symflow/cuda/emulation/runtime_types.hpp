#pragma once
// The CUDA runtime's types, enums and numbers (as CUDA defines them, in the global namespace) for
// the emulation build: errors, copy kinds, capture states, device attributes and properties, the
// vector types, and the handles (streams, events, graphs) whose state runtime_api.hpp keeps.
#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotSupported = 801,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureUnmatched = 903,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone = 0, cudaStreamCaptureStatusActive = 1, cudaStreamCaptureStatusInvalidated = 2 };
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1, cudaStreamCaptureModeRelaxed = 2 };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16, cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76 };
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 4 };
inline constexpr unsigned cudaStreamNonBlocking = 1;

struct int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };

struct cudaDeviceProp {
  char name[256] = "symflow host emulation (NVIDIA H100 80GB HBM3 properties)";
  std::size_t totalGlobalMem = std::size_t(80) << 30;
  std::size_t sharedMemPerBlock = 48 * 1024;
  int warpSize = 32;
  int maxThreadsPerBlock = 1024;
  int maxThreadsDim[3] = {1024, 1024, 64};
  int maxGridSize[3] = {2147483647, 65535, 65535};
  int multiProcessorCount = 132;
  int major = 9, minor = 0;
  int maxThreadsPerMultiProcessor = 2048;
};

namespace symflow::cuda::emulation::runtime_detail {
struct allocation {
  std::unique_ptr<unsigned char[]> bytes;
  std::size_t size = 0;
};
// A graph: the work a captured stream was given, in order.
struct recorded_graph {
  std::vector<std::function<void()>> nodes;
};
}  // namespace symflow::cuda::emulation::runtime_detail

struct CUstream_st {
  symflow::cuda::emulation::runtime_detail::recorded_graph* capture = nullptr;  // while capturing
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at{};
  bool recorded = false;
};
struct CUgraph_st : symflow::cuda::emulation::runtime_detail::recorded_graph {};
struct CUgraphExec_st {
  const CUgraph_st* graph = nullptr;
};
struct CUmemPoolHandle_st {};
using cudaStream_t = CUstream_st*;
using cudaEvent_t = CUevent_st*;
using cudaGraph_t = CUgraph_st*;
using cudaGraphExec_t = CUgraphExec_st*;
using cudaMemPool_t = CUmemPoolHandle_st*;
