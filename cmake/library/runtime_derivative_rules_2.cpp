// Part of symflow_library (core/separate_compilation.hpp): the second half of the op list's
// derivative rules (runtime_derivative_rules.cpp has find_derivative_rule and the first half).
#define SYMFLOW_LIBRARY_IMPLEMENTATION
#define SYMFLOW_LIBRARY_PART_DERIVATIVE_RULES_2
#include <symflow/runtime/derivative_rules.hpp>
