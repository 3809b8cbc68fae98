// CPU references for epilogue_test.cu (the C++ compiler: the CPU evaluator with feeds does not compile
// under nvcc, docs/cuda.md).
#include "cpu_reference.hpp"
#include "epilogue_cases.hpp"

namespace symflow_cuda_test {

#define SYMFLOW_INSTANTIATE_EPILOGUE(name) \
  template host_array cpu_reference<epilogue_cases::name>(const case_inputs&);
SYMFLOW_CUDA_EPILOGUE_CASES(SYMFLOW_INSTANTIATE_EPILOGUE)

}  // namespace symflow_cuda_test
