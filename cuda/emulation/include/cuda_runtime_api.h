// The emulation build's cuda_runtime_api.h (SYMFLOW_CUDA_HOST_EMULATION: this folder comes first on the include
// path): CUDA's device API and runtime answered on the host (symflow/cuda/emulation/, docs/cuda.md
// "Host emulation of the execution model").
#pragma once
#include <symflow/cuda/emulation/runtime_api.hpp>
