#pragma once
// Where the backend's device code is compiled: by nvcc, or by the host compiler against the
// emulator of CUDA's execution model and runtime (SYMFLOW_CUDA_HOST_EMULATION, emulation/;
// docs/cuda.md, "Host emulation of the execution model"). Headers that hold kernels or device
// functions test SYMFLOW_CUDA_DEVICE_CODE instead of __CUDACC__, and every kernel launch is written
//   SYMFLOW_LAUNCH(grid, block, shared_bytes, stream, kernel)(arguments...)
// which is kernel<<<grid, block, shared_bytes, stream>>>(arguments...) under nvcc and a launch on
// the emulated stream otherwise (the kernel comes last: its template arguments may hold commas).
#if defined(__CUDACC__) && defined(SYMFLOW_CUDA_HOST_EMULATION)
#error "SYMFLOW_CUDA_HOST_EMULATION is for the host compiler; nvcc compiles for the real device"
#endif

#if defined(__CUDACC__) || defined(SYMFLOW_CUDA_HOST_EMULATION)
#define SYMFLOW_CUDA_DEVICE_CODE 1
#endif

#if defined(SYMFLOW_CUDA_HOST_EMULATION)
#include <symflow/cuda/emulation/runtime_api.hpp>
#define SYMFLOW_LAUNCH(grid, block, shared_bytes, stream, ...) \
  ::symflow::cuda::emulation::make_launcher((stream), #__VA_ARGS__, &__VA_ARGS__, (grid), (block), (shared_bytes))
#else
#define SYMFLOW_LAUNCH(grid, block, shared_bytes, stream, ...) __VA_ARGS__<<<(grid), (block), (shared_bytes), (stream)>>>
#endif
