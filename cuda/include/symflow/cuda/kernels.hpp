#pragma once
// The templated kernels every fusion group instantiates: a map over the group's frame (dense and
// vectorised, or strided with broadcasting), and reductions that evaluate their fused elementwise
// operand on the fly (no temporary holds it). Instantiated on name-free device evaluators only.
// One header per kind of kernel; this one includes them all.
#include "device_code.hpp"
#if !defined(SYMFLOW_CUDA_DEVICE_CODE)
#error "symflow/cuda/kernels.hpp holds CUDA kernels: include <symflow/cuda.hpp> from a .cu file compiled by nvcc, or define SYMFLOW_CUDA_HOST_EMULATION"
#endif
#include "kernel_primitives.hpp"  // block size, index decoding, warp reduction, check_numerics
#include "map_kernels.hpp"        // elementwise fusion groups
#include "reduce_kernels.hpp"     // reductions with their fused operand, and their finishing kernel
#include "one_pass_kernels.hpp"   // several outputs over one frame in one pass
#include "utility_kernels.hpp"    // fill, set_values, one_hot, the check_numerics scan
