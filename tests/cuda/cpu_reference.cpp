// CPU references for the GPU suite: symflow::eval on the CPU backend, compiled by the C++ compiler
// (so the references do not depend on nvcc compiling the CPU evaluator).
#include "cases.hpp"
#include "cpu_reference.hpp"

namespace symflow_cuda_test {

#define SYMFLOW_INSTANTIATE(name) template host_array cpu_reference<cases::name>(const case_inputs&);
SYMFLOW_CUDA_ELEMENTWISE_CASES(SYMFLOW_INSTANTIATE)
SYMFLOW_CUDA_STRUCTURE_CASES(SYMFLOW_INSTANTIATE)
SYMFLOW_CUDA_GRADIENT_CASES(SYMFLOW_INSTANTIATE)

}  // namespace symflow_cuda_test
