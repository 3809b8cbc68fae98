#pragma once
// check_numerics on the GPU, the switch and the flag: whether the checked kernel instantiations are
// compiled in, the device flag the kernels set for one evaluation, and its one read back to the host.
#include <cuda_runtime.h>

#include <type_traits>

#include <symflow/eval/numerics.hpp>

#include "runtime.hpp"

namespace symflow::cuda {
namespace detail {

// check_numerics on the GPU: SYMFLOW_CUDA_FUSED_NUMERICS_CHECK=0 at compile time leaves the checked
// kernel instantiations out (less nvcc time); outputs are then scanned by a kernel of their own.
#ifndef SYMFLOW_CUDA_FUSED_NUMERICS_CHECK
#define SYMFLOW_CUDA_FUSED_NUMERICS_CHECK 1
#endif
inline constexpr bool fused_numerics_check = SYMFLOW_CUDA_FUSED_NUMERICS_CHECK != 0;

// The device flag check_numerics' kernels set, for one evaluation: null when the switch is off,
// when no output is floating-point, or while the stream is being captured into a CUDA graph (reading
// the flag back would synchronise; a captured evaluation is not checked).
template <class... Ev, class Ctx>
unsigned* numerics_flag_for(Ctx& ctx) {
  if constexpr (!(std::is_floating_point_v<typename Ev::value_type> || ...)) {
    return nullptr;
  } else {
    if (!check_numerics_enabled()) return nullptr;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    SYMFLOW_CUDA_CHECK(cudaStreamIsCapturing(ctx.stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) return nullptr;
    unsigned* flag = ctx.template allocate<unsigned>(1);
    SYMFLOW_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(unsigned), ctx.stream));
    return flag;
  }
}
// The one device-to-host read of check_numerics: waits for the evaluation.
inline bool numerics_flag_clear(const unsigned* flag, cudaStream_t s) {
  if (!flag) return true;
  unsigned h = 0;
  SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(&h, flag, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
  SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(s));
  return h == 0;
}

}  // namespace detail
}  // namespace symflow::cuda
