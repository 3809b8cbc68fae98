// The float and double matrix products (core/gemm.hpp), compiled once for every program that links
// symflow_library. Compiled with the default -ffp-contract (CMakeLists.txt): see
// core/separate_compilation.hpp, SYMFLOW_LIBRARY_PART_GEMM.
#define SYMFLOW_LIBRARY_IMPLEMENTATION
#define SYMFLOW_LIBRARY_PART_GEMM
#include <symflow/core/gemm.hpp>
