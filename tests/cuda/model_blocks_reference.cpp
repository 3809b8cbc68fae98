// CPU references of the model-block cases, compiled by the C++ compiler.
#include "cpu_reference.hpp"
#include "model_blocks_cases.hpp"

namespace symflow_cuda_test {

#define SYMFLOW_INSTANTIATE(name) template host_array cpu_reference<cases::name>(const case_inputs&);
SYMFLOW_CUDA_MODEL_BLOCK_CASES(SYMFLOW_INSTANTIATE)

}  // namespace symflow_cuda_test
