#pragma once
// Data-parallel gradients that live on the GPU (the CUDA backend's device_params, a cuda::eval_into
// of the gradients): summed over the ranks like gradient_exchange (data_parallel.hpp) sums host
// gradients, weighted by each rank's share of the batch. Needs the CUDA runtime and cuBLAS (CMake:
// CUDA::cudart, CUDA::cublas) besides MPI; it is host code, compiled by the C++ compiler.
//
//   distributed::device_gradient_exchange exchange(world, stream);
//   exchange.sum({{gW.data(), gW.size()}, {gb.data(), gb.size()}}, mine.weight());
//
// Two routes, chosen once:
//   - CUDA-aware MPI (OpenMPI built with CUDA, MVAPICH2-GDR, ...; MPIX_Query_cuda_support() says
//     so at run time): the gradients are packed into one device buffer, scaled there (cuBLAS
//     sscal), and all-reduced from device memory, which such an MPI moves over NVLink or GPUDirect;
//   - otherwise (Debian's OpenMPI, for one): packed into one pinned host buffer by asynchronous
//     copies on the stream, scaled and all-reduced on the host, copied back.
// Either way every rank gets the same bits (communicator::allreduce_sum) and the call returns
// when the summed gradients are on the device (the stream is synchronised).
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "communicator.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace symflow::distributed {

// Whether this MPI reads and writes device memory itself.
inline bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

class device_gradient_exchange {
 public:
  // One f32 gradient in device memory: its first element and its element count.
  using span = std::pair<float*, std::size_t>;

  device_gradient_exchange(communicator& c, cudaStream_t stream = nullptr, bool allow_cuda_aware = true)
      : c_(c), stream_(stream), cuda_aware_(allow_cuda_aware && mpi_is_cuda_aware()) {}
  device_gradient_exchange(const device_gradient_exchange&) = delete;
  device_gradient_exchange& operator=(const device_gradient_exchange&) = delete;
  ~device_gradient_exchange() {
    if (host_) cudaFreeHost(host_);
    if (device_) cudaFree(device_);
    if (blas_) cublasDestroy(blas_);
  }

  bool cuda_aware() const { return cuda_aware_; }

  // Each gradient replaced by the sum over the ranks of weight x that rank's gradient. Every rank
  // must pass gradients of the same sizes in the same order (as gradient_exchange checks, the
  // total is compared on the first call and whenever it changes).
  void sum(const std::vector<span>& gradients, double weight) {
    std::size_t n = 0;
    for (const span& g : gradients) n += g.second;
    check_total(n);
    if (n == 0) return;
    reserve(n);
    const float w = static_cast<float>(weight);
    std::size_t offset = 0;
    if (cuda_aware_) {
      for (const span& g : gradients) {
        cuda(cudaMemcpyAsync(device_ + offset, g.first, g.second * sizeof(float), cudaMemcpyDeviceToDevice, stream_), "pack");
        offset += g.second;
      }
      scale_on_device(n, w);
      cuda(cudaStreamSynchronize(stream_), "pack");
      c_.allreduce_sum(device_, n, "f32 gradients (device memory)");
      offset = 0;
      for (const span& g : gradients) {
        cuda(cudaMemcpyAsync(g.first, device_ + offset, g.second * sizeof(float), cudaMemcpyDeviceToDevice, stream_), "unpack");
        offset += g.second;
      }
    } else {
      for (const span& g : gradients) {
        cuda(cudaMemcpyAsync(host_ + offset, g.first, g.second * sizeof(float), cudaMemcpyDeviceToHost, stream_), "copy to the host");
        offset += g.second;
      }
      cuda(cudaStreamSynchronize(stream_), "copy to the host");
      for (std::size_t i = 0; i < n; ++i) host_[i] = weight == 0 ? 0.0f : host_[i] * w;
      c_.allreduce_sum(host_, n, "f32 gradients (staged through the host)");
      offset = 0;
      for (const span& g : gradients) {
        cuda(cudaMemcpyAsync(g.first, host_ + offset, g.second * sizeof(float), cudaMemcpyHostToDevice, stream_), "copy to the device");
        offset += g.second;
      }
    }
    cuda(cudaStreamSynchronize(stream_), "copy back");
  }

 private:
  void cuda(cudaError_t e, const char* what) const {
    if (e != cudaSuccess)
      throw distributed_error("distributed::device_gradient_exchange: " + c_.describe() + ": " + what + ": " +
                              cudaGetErrorString(e));
  }
  void check_total(std::size_t n) {
    if (checked_ && n == checked_total_) return;
    if (const auto other = c_.first_differing({n}, "device gradient sizes"))
      throw distributed_error("distributed::device_gradient_exchange: " + c_.describe() + " has " + std::to_string(n) +
                              " gradient elements, rank " + std::to_string(other->first) + " has " +
                              std::to_string(other->second[0]) + " (the ranks must train the same model)");
    checked_ = true;
    checked_total_ = n;
  }
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    if (host_) cudaFreeHost(host_);
    if (device_) cudaFree(device_);
    host_ = nullptr;
    device_ = nullptr;
    capacity_ = 0;
    if (cuda_aware_) cuda(cudaMalloc(reinterpret_cast<void**>(&device_), n * sizeof(float)), "allocate the device buffer");
    else cuda(cudaMallocHost(reinterpret_cast<void**>(&host_), n * sizeof(float)), "allocate the pinned host buffer");
    capacity_ = n;
  }
  void scale_on_device(std::size_t n, float w) {
    if (!blas_ && cublasCreate(&blas_) != CUBLAS_STATUS_SUCCESS)
      throw distributed_error("distributed::device_gradient_exchange: cublasCreate failed");
    cublasSetStream(blas_, stream_);
    for (std::size_t done = 0; done < n;) {  // cuBLAS counts in int
      const int count = int(std::min<std::size_t>(n - done, std::size_t(1) << 30));
      if (w == 0.0f) cuda(cudaMemsetAsync(device_ + done, 0, std::size_t(count) * sizeof(float), stream_), "zero");
      else if (cublasSscal(blas_, count, &w, device_ + done, 1) != CUBLAS_STATUS_SUCCESS)
        throw distributed_error("distributed::device_gradient_exchange: cublasSscal failed");
      done += std::size_t(count);
    }
  }

  communicator& c_;
  cudaStream_t stream_;
  bool cuda_aware_;
  bool checked_ = false;
  std::size_t checked_total_ = 0, capacity_ = 0;
  float* host_ = nullptr;
  float* device_ = nullptr;
  cublasHandle_t blas_ = nullptr;
};

}  // namespace symflow::distributed
