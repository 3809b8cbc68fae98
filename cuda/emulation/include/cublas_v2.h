// The emulation build's cublas_v2.h (SYMFLOW_CUDA_HOST_EMULATION: this folder comes first on the include
// path): cuBLAS and cuBLASLt answered on the host with Eigen (symflow/cuda/emulation/, docs/cuda.md
// "Host emulation of the execution model").
#pragma once
#include <symflow/cuda/emulation/cublas_api.hpp>
