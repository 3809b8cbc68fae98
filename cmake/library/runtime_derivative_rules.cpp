// Part of symflow_library (core/separate_compilation.hpp): every op's derivative rule as a graph
// fragment (find_derivative_rule), for differentiating graph values; runtime_op_table.cpp has the
// kernels.
#define SYMFLOW_LIBRARY_IMPLEMENTATION
#define SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES
#include <symflow/runtime/grad.hpp>
