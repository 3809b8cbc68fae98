#pragma once
// The CUDA runtime calls the backend makes, answered on the host for the emulation build
// (cuda/emulation/include/cuda_runtime.h forwards here): one device with an H100's properties;
// device memory is host memory that every allocation fills with poison (all bytes 0xFF: NaN for
// floats) and that a registry knows, so a copy whose kind disagrees with where its pointers lie, a
// free of something never allocated or a copy past an allocation's end is an error code, as a
// careless program would get wrong on a GPU. Streams run their work when it is enqueued; a stream
// being captured records it instead, and a graph launch replays it. Events time with the host's
// steady clock. Kernels launched with launch_on (device_api.hpp's launch, on a stream) run at once
// or are recorded. Names and numbers are CUDA's, in the global namespace.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "device_api.hpp"

#include "runtime_types.hpp"


namespace symflow::cuda::emulation {

// Every device allocation, by its first byte.
class device_memory {
 public:
  static device_memory& instance() {
    static device_memory* m = new device_memory;  // never destroyed: frees may run at exit
    return *m;
  }
  void* allocate(std::size_t size) {
    runtime_detail::allocation a{std::unique_ptr<unsigned char[]>(new unsigned char[size ? size : 1]), size};
    std::memset(a.bytes.get(), 0xFF, size);  // poison
    void* p = a.bytes.get();
    std::lock_guard lock(mutex_);
    blocks_.emplace(reinterpret_cast<std::uintptr_t>(p), std::move(a));
    return p;
  }
  bool release(void* p) {
    std::lock_guard lock(mutex_);
    return blocks_.erase(reinterpret_cast<std::uintptr_t>(p)) == 1;
  }
  // Whether [p, p + size) lies inside one allocation (size 0: whether p points into one).
  bool holds(const void* p, std::size_t size) const {
    std::lock_guard lock(mutex_);
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    auto it = blocks_.upper_bound(at);
    if (it == blocks_.begin()) return false;
    --it;
    const std::uintptr_t offset = at - it->first;
    return size == 0 ? offset < std::max<std::size_t>(it->second.size, 1) : offset + size <= it->second.size;
  }
  bool touches(const void* p) const { return holds(p, 0); }
  std::size_t count() const {
    std::lock_guard lock(mutex_);
    return blocks_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, runtime_detail::allocation> blocks_;
};

namespace runtime_detail {
inline cudaError_t& last_error() {
  thread_local cudaError_t e = cudaSuccess;
  return e;
}
inline cudaError_t fail(cudaError_t e) {
  last_error() = e;
  return e;
}
inline CUstream_st& default_stream() {
  static CUstream_st s;
  return s;
}
inline CUstream_st& stream_of(cudaStream_t s) { return s ? *s : default_stream(); }
// Runs work now, or records it on a capturing stream.
inline void enqueue(cudaStream_t s, std::function<void()> work) {
  CUstream_st& st = stream_of(s);
  if (st.capture) st.capture->nodes.push_back(std::move(work));
  else work();
}
inline cudaError_t check_copy(void* dst, const void* src, std::size_t n, cudaMemcpyKind kind) {
  const device_memory& m = device_memory::instance();
  const bool dst_device = m.touches(dst), src_device = m.touches(src);
  if (n == 0) return cudaSuccess;
  switch (kind) {
    case cudaMemcpyHostToHost: return dst_device || src_device ? cudaErrorInvalidValue : cudaSuccess;
    case cudaMemcpyHostToDevice: return m.holds(dst, n) && !src_device ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToHost: return m.holds(src, n) && !dst_device ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDeviceToDevice: return m.holds(src, n) && m.holds(dst, n) ? cudaSuccess : cudaErrorInvalidValue;
    case cudaMemcpyDefault:
      return (!dst_device || m.holds(dst, n)) && (!src_device || m.holds(src, n)) ? cudaSuccess : cudaErrorInvalidValue;
  }
  return cudaErrorInvalidMemcpyDirection;
}
}  // namespace runtime_detail

// kernel<<<grid, block, 0, stream>>>(args...) under emulation: runs now, or is recorded by a
// capturing stream (its arguments copied at the launch, as CUDA copies them).
template <class... P, class... A>
void launch_on(cudaStream_t stream, const char* name, void (*kernel)(P...), dim3 grid, dim3 block, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "launch_on: the kernel takes another number of arguments");
  auto copied = std::make_shared<std::tuple<std::remove_cvref_t<P>...>>(std::forward<A>(args)...);
  runtime_detail::enqueue(stream, [=] {
    std::apply([&](auto&... a) { launch(name, kernel, grid, block, a...); }, *copied);
  });
}

// What SYMFLOW_LAUNCH(grid, block, shared_bytes, stream, kernel) stands for under emulation: a
// callable taking the kernel's arguments. Dynamic shared memory is not emulated.
template <class... P>
struct launcher {
  cudaStream_t stream;
  const char* name;
  void (*kernel)(P...);
  dim3 grid, block;
  template <class... A>
  void operator()(A&&... args) const {
    launch_on(stream, name, kernel, grid, block, std::forward<A>(args)...);
  }
};
template <class... P>
launcher<P...> make_launcher(cudaStream_t stream, const char* name, void (*kernel)(P...), dim3 grid, dim3 block,
                             std::size_t shared_bytes) {
  if (shared_bytes != 0)
    throw emulation_error(std::string(name) + ": a launch with dynamic shared memory (" + std::to_string(shared_bytes) +
                          " bytes), which the emulator does not provide");
  return {stream, name, kernel, grid, block};
}

}  // namespace symflow::cuda::emulation

inline cudaError_t cudaGetLastError() {
  const cudaError_t e = symflow::cuda::emulation::runtime_detail::last_error();
  symflow::cuda::emulation::runtime_detail::last_error() = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return symflow::cuda::emulation::runtime_detail::last_error(); }
inline const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
  }
  return "cudaErrorUnknown";
}
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument (emulation: a pointer is not where the copy's kind says, or a range passes an allocation's end)";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    default: return cudaGetErrorName(e);
  }
}

inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) {
  return d == 0 ? cudaSuccess : symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidDevice);
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  if (d != 0) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidDevice);
  *p = cudaDeviceProp{};
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int d) {
  if (d != 0) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidDevice);
  const cudaDeviceProp p{};
  switch (a) {
    case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor: *v = p.major; return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor: *v = p.minor; return cudaSuccess;
  }
  return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidValue);
}
template <class Kernel>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Kernel, int block_size, std::size_t) {
  if (block_size <= 0 || block_size > 1024) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidValue);
  *blocks = std::min(32, 2048 / block_size);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

inline cudaError_t cudaMalloc(void** p, std::size_t n) {
  *p = symflow::cuda::emulation::device_memory::instance().allocate(n);
  return cudaSuccess;
}
template <class T>
cudaError_t cudaMalloc(T** p, std::size_t n) {
  return cudaMalloc(reinterpret_cast<void**>(p), n);
}
inline cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  return symflow::cuda::emulation::device_memory::instance().release(p)
             ? cudaSuccess
             : symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidDevicePointer);
}
inline cudaError_t cudaMallocAsync(void** p, std::size_t n, cudaStream_t s) {
  *p = symflow::cuda::emulation::device_memory::instance().allocate(n);
  // Replayed by a graph, the allocation starts as poison again, as a fresh one would.
  if (symflow::cuda::emulation::runtime_detail::stream_of(s).capture) {
    void* at = *p;
    symflow::cuda::emulation::runtime_detail::enqueue(s, [at, n] { std::memset(at, 0xFF, n); });
  }
  return cudaSuccess;
}
template <class T>
cudaError_t cudaMallocAsync(T** p, std::size_t n, cudaStream_t s) {
  return cudaMallocAsync(reinterpret_cast<void**>(p), n, s);
}
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  if (!p) return cudaSuccess;
  auto& memory = symflow::cuda::emulation::device_memory::instance();
  if (!memory.touches(p)) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidDevicePointer);
  // Freed inside a capture, the memory stays for the graph's replays (a graph owns what it allocates).
  if (!symflow::cuda::emulation::runtime_detail::stream_of(s).capture) memory.release(p);
  return cudaSuccess;
}

inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t n, cudaMemcpyKind kind, cudaStream_t s = nullptr) {
  if (const cudaError_t e = symflow::cuda::emulation::runtime_detail::check_copy(dst, src, n, kind))
    return symflow::cuda::emulation::runtime_detail::fail(e);
  if (n)
    symflow::cuda::emulation::runtime_detail::enqueue(s, [=] {
      std::memmove(dst, src, n);
      symflow::cuda::emulation::statistics().copies += 1;
      symflow::cuda::emulation::statistics().copied_bytes += n;
    });
  return cudaSuccess;
}
// `height` rows of `width` bytes, rows `dpitch` and `spitch` bytes apart.
inline cudaError_t cudaMemcpy2DAsync(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                                     std::size_t height, cudaMemcpyKind kind, cudaStream_t s = nullptr) {
  if (width > dpitch || width > spitch) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidValue);
  if (width == 0 || height == 0) return cudaSuccess;
  const std::size_t dst_extent = dpitch * (height - 1) + width, src_extent = spitch * (height - 1) + width;
  if (const cudaError_t e = symflow::cuda::emulation::runtime_detail::check_copy(dst, src, std::min(dst_extent, src_extent), kind))
    return symflow::cuda::emulation::runtime_detail::fail(e);
  const auto& memory = symflow::cuda::emulation::device_memory::instance();
  if ((memory.touches(dst) && !memory.holds(dst, dst_extent)) || (memory.touches(src) && !memory.holds(src, src_extent)))
    return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidValue);
  symflow::cuda::emulation::runtime_detail::enqueue(s, [=] {
    for (std::size_t r = 0; r < height; ++r)
      std::memmove(static_cast<unsigned char*>(dst) + r * dpitch, static_cast<const unsigned char*>(src) + r * spitch, width);
    symflow::cuda::emulation::statistics().copies += 1;
    symflow::cuda::emulation::statistics().copied_bytes += width * height;
  });
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t n, cudaMemcpyKind kind) {
  if (symflow::cuda::emulation::runtime_detail::default_stream().capture)
    return symflow::cuda::emulation::runtime_detail::fail(cudaErrorStreamCaptureUnsupported);
  return cudaMemcpyAsync(dst, src, n, kind, nullptr);
}
inline cudaError_t cudaMemsetAsync(void* p, int value, std::size_t n, cudaStream_t s = nullptr) {
  if (n && !symflow::cuda::emulation::device_memory::instance().holds(p, n))
    return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidValue);
  if (n)
    symflow::cuda::emulation::runtime_detail::enqueue(s, [=] {
      std::memset(p, value, n);
      symflow::cuda::emulation::statistics().sets += 1;
      symflow::cuda::emulation::statistics().set_bytes += n;
    });
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int value, std::size_t n) { return cudaMemsetAsync(p, value, n, nullptr); }

inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = new CUstream_st;
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, 0); }
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!s) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidResourceHandle);
  delete s;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (symflow::cuda::emulation::runtime_detail::stream_of(s).capture)
    return symflow::cuda::emulation::runtime_detail::fail(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess;  // its work ran when it was enqueued
}
inline cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  CUstream_st& st = symflow::cuda::emulation::runtime_detail::stream_of(s);
  if (st.capture) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorStreamCaptureInvalidated);
  st.capture = new CUgraph_st;
  return cudaSuccess;
}
inline cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  CUstream_st& st = symflow::cuda::emulation::runtime_detail::stream_of(s);
  if (!st.capture) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorStreamCaptureUnmatched);
  *g = static_cast<CUgraph_st*>(st.capture);
  st.capture = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  *status = symflow::cuda::emulation::runtime_detail::stream_of(s).capture ? cudaStreamCaptureStatusActive
                                                                            : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t g, unsigned long long) {
  if (!g) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidResourceHandle);
  *exec = new CUgraphExec_st{g};
  return cudaSuccess;
}
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (!exec || !exec->graph) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidResourceHandle);
  for (const auto& node : exec->graph->nodes) symflow::cuda::emulation::runtime_detail::enqueue(s, node);
  return cudaSuccess;
}
// Nodes of the graph (`nodes` null: their count).
inline cudaError_t cudaGraphGetNodes(cudaGraph_t g, void** nodes, std::size_t* count) {
  if (!g) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidResourceHandle);
  if (nodes) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorNotSupported);
  *count = g->nodes.size();
  return cudaSuccess;
}
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete exec;
  return cudaSuccess;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return cudaSuccess;
}

inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st;
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr) {
  if (!e) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidResourceHandle);
  symflow::cuda::emulation::runtime_detail::enqueue(s, [e] {
    e->at = std::chrono::steady_clock::now();
    e->recorded = true;
  });
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return e ? cudaSuccess : symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidResourceHandle);
}
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start || !end || !start->recorded || !end->recorded)
    return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}

inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int d) {
  static CUmemPoolHandle_st the_pool;
  if (d != 0) return symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidDevice);
  *pool = &the_pool;
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr, void*) {
  return pool ? cudaSuccess : symflow::cuda::emulation::runtime_detail::fail(cudaErrorInvalidValue);
}
