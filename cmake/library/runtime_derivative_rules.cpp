// Part of symflow_library (core/separate_compilation.hpp): find_derivative_rule, which gives every
// op's derivative rule as a graph fragment for differentiating graph values, and the first half of
// the op list's rules (runtime_derivative_rules_2.cpp: the second half; runtime_op_table.cpp: the
// kernels).
#define SYMFLOW_LIBRARY_IMPLEMENTATION
#define SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES
#include <symflow/runtime/derivative_rules.hpp>
