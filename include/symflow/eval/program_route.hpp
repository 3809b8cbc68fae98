#pragma once
#include <type_traits>

namespace symflow::detail {

// Whether eval computes E's value with a runtime program instead of typed loops, and the
// expression that does (rewrite). A hook: symbolic/gradient.hpp specialises it, where the graph
// runtime's tables are linked, for the scalar values of large models (the loss of a deep model):
// their typed evaluation costs the compiler a function per node type, each named after the model
// below it, where the program costs it the model's lowering, which its gradient needs anyway.
template <class E, class = void>
struct evaluated_by_program : std::false_type {};

}  // namespace symflow::detail
