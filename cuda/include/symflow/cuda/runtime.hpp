#pragma once
// CUDA runtime plumbing shared by the backend: errors, streams, device queries, the stream-ordered
// allocator and the cuBLAS handle. Host code only.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include <symflow/core/error.hpp>

namespace symflow::cuda {

// A CUDA runtime or cuBLAS call failed (or a kernel launch was rejected).
class cuda_error : public symflow::error {
 public:
  using symflow::error::error;
};

namespace detail {
[[noreturn]] inline void throw_cuda(cudaError_t e, const char* what, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so later calls are not blamed for it
  throw cuda_error(std::string("symflow::cuda: ") + what + " failed: " + cudaGetErrorName(e) + " (" +
                   cudaGetErrorString(e) + ") at " + file + ":" + std::to_string(line));
}
}  // namespace detail

#define SYMFLOW_CUDA_CHECK(call)                                                     \
  do {                                                                               \
    const cudaError_t symflow_cuda_status_ = (call);                                 \
    if (symflow_cuda_status_ != cudaSuccess)                                         \
      ::symflow::cuda::detail::throw_cuda(symflow_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)

// Checks that the kernel launched just before was accepted (bad configuration, missing image).
#define SYMFLOW_CUDA_CHECK_LAUNCH(name)                                              \
  do {                                                                               \
    const cudaError_t symflow_cuda_status_ = cudaGetLastError();                     \
    if (symflow_cuda_status_ != cudaSuccess)                                         \
      ::symflow::cuda::detail::throw_cuda(symflow_cuda_status_, "launch of " name, __FILE__, __LINE__); \
  } while (0)

// True when the CUDA runtime finds at least one device (false without a driver or a GPU).
inline bool device_available() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  return e == cudaSuccess && count > 0;
}

// "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)" or the reason no device is usable.
inline std::string device_description() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no CUDA device: ") + cudaGetErrorString(e);
  }
  if (count == 0) return "no CUDA device: the runtime found none";
  int dev = 0;
  SYMFLOW_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  SYMFLOW_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  return std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.multiProcessorCount) + " SMs)";
}

// A non-owning stream handle; the default (null) is CUDA's legacy default stream.
struct stream_ref {
  cudaStream_t handle = nullptr;
  stream_ref() = default;
  stream_ref(cudaStream_t s) : handle(s) {}
  operator cudaStream_t() const { return handle; }
  void synchronize() const { SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(handle)); }
};

// An owning stream (non-blocking with respect to the legacy default stream).
class stream {
 public:
  stream() { SYMFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking)); }
  ~stream() {
    if (handle_) (void)cudaStreamDestroy(handle_);
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  stream(stream&& o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  cudaStream_t get() const { return handle_; }
  operator stream_ref() const { return {handle_}; }
  void synchronize() const { SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(handle_)); }

 private:
  cudaStream_t handle_ = nullptr;
};

// A CUDA graph captured from the work `record` queues on stream `s`, instantiated once and replayed
// with launch(). Capture needs a created stream (not the legacy default one) and work that does not
// synchronise: run the evaluation once before capturing (cuBLAS handles and the pool are set up on
// first use), use eval_into with preallocated outputs, and keep kernel ops with a host fallback out.
// Feeds are baked in by address: replays read whatever those device buffers hold then.
class graph {
 public:
  template <class Record>
  static graph capture(stream_ref s, Record&& record) {
    graph g;
    SYMFLOW_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      record();
    } catch (...) {
      cudaGraph_t partial = nullptr;
      (void)cudaStreamEndCapture(s, &partial);
      if (partial) (void)cudaGraphDestroy(partial);
      throw;
    }
    SYMFLOW_CUDA_CHECK(cudaStreamEndCapture(s, &g.graph_));
    SYMFLOW_CUDA_CHECK(cudaGraphInstantiate(&g.exec_, g.graph_, 0));
    return g;
  }
  graph(graph&& o) noexcept : graph_(o.graph_), exec_(o.exec_) {
    o.graph_ = nullptr;
    o.exec_ = nullptr;
  }
  graph& operator=(graph&& o) noexcept {
    if (this != &o) {
      release();
      graph_ = o.graph_;
      exec_ = o.exec_;
      o.graph_ = nullptr;
      o.exec_ = nullptr;
    }
    return *this;
  }
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;
  ~graph() { release(); }
  void launch(stream_ref s) const { SYMFLOW_CUDA_CHECK(cudaGraphLaunch(exec_, s)); }
  std::size_t node_count() const {
    std::size_t n = 0;
    SYMFLOW_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &n));
    return n;
  }

 private:
  graph() = default;
  void release() noexcept {
    if (exec_) (void)cudaGraphExecDestroy(exec_);
    if (graph_) (void)cudaGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
  }
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

namespace detail {

struct device_facts {
  int device = -1;
  int sm_count = 1;
};

// Multiprocessor count of the current device (cached per device).
inline int sm_count() {
  static thread_local device_facts cached;
  int dev = 0;
  SYMFLOW_CUDA_CHECK(cudaGetDevice(&dev));
  if (cached.device != dev) {
    SYMFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&cached.sm_count, cudaDevAttrMultiProcessorCount, dev));
    cached.device = dev;
  }
  return cached.sm_count;
}

// The stream-ordered allocator keeps freed blocks in its pool (instead of returning them at every
// synchronisation), so the per-evaluation workspace costs no cudaMalloc after warm-up.
inline void configure_pool_once(int dev) {
  static std::mutex m;
  static std::uint64_t configured = 0;  // bit per device (first 64 devices)
  std::lock_guard<std::mutex> lock(m);
  if (dev < 64 && (configured >> dev) & 1u) return;
  cudaMemPool_t pool{};
  if (cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
    std::uint64_t threshold = UINT64_MAX;
    (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  }
  (void)cudaGetLastError();
  if (dev < 64) configured |= std::uint64_t(1) << dev;
}

inline void* device_allocate(std::size_t bytes, cudaStream_t s) {
  if (bytes == 0) return nullptr;
  int dev = 0;
  SYMFLOW_CUDA_CHECK(cudaGetDevice(&dev));
  configure_pool_once(dev);
  void* p = nullptr;
  SYMFLOW_CUDA_CHECK(cudaMallocAsync(&p, bytes, s));
  return p;
}
inline void device_free(void* p, cudaStream_t s) noexcept {
  if (p) (void)cudaFreeAsync(p, s);
}

}  // namespace detail
}  // namespace symflow::cuda
