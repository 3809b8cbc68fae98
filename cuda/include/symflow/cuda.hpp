#pragma once
// The CUDA backend: #include <symflow/cuda.hpp> from a .cu file compiled by nvcc (C++20,
// --expt-relaxed-constexpr), link the CMake target symflow::cuda.
//
//   auto d_x = cuda::to_device(x_host);
//   auto y   = cuda::eval(relu(matmul(x, W) + b), cuda::feed(x, d_x), device_store);
//   auto h   = y.to_host();
//
// Device tensors and streams (runtime.hpp, device_tensor.hpp) are plain host C++ and also usable from
// .cpp files; the evaluator (kernels) needs nvcc, or the host compiler with
// SYMFLOW_CUDA_HOST_EMULATION (docs/cuda.md, "Host emulation of the execution model").
#include "cuda/device_code.hpp"
#include "cuda/runtime.hpp"
#include "cuda/device_tensor.hpp"
#include "cuda/placement_log.hpp"
#include "cuda/profile.hpp"
#if defined(SYMFLOW_CUDA_DEVICE_CODE)  // nvcc, or the host-emulation build
#include "cuda/device.hpp"
#include "cuda/kernels.hpp"
#include "cuda/evaluators.hpp"
#include "cuda/fusion_groups.hpp"
#include "cuda/kernel_ops.hpp"
#include "cuda/multi_output.hpp"
#include "cuda/eval.hpp"
#endif
