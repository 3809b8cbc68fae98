#pragma once
// How a view or kernel, whose attributes are template arguments, gives the op-law tests
// (tests/ops/op_laws.hpp) one instance of itself, in its own file next to its doc string:
//
//   struct law_example {
//     using operands = std::tuple<law::floating<shape<dyn, 37>>>;
//     template <class T>
//     static auto of(const auto& x0) { return permute<1, 0>(x0); }
//   };
//
// The laws make a placeholder per operand (x0, x1, ...; dyn extents are 3), fill it, and check
// `of<T>(x0, ...)` for T = float and double: compiled against interpreted evaluation bit for bit,
// printing and both file forms, simplification, and in double its gradient against central finite
// differences and the rule run on graph nodes against the rule run on types.
#include "../core/shape.hpp"

namespace symflow::law {

// An operand in the law's floating type: random values with NaN, ±Inf, ±0 and huge values among
// them, or only finite ones where the op's kernel is a GEMM (whose NaN propagation is Eigen's).
template <shape_spec S, bool Finite = false>
struct floating {
  using shape_type = S;
  static constexpr bool finite = Finite;
};
// An int32 operand (class labels) with values in [Lo, Hi).
template <shape_spec S, int Lo, int Hi>
struct labels {
  using shape_type = S;
  static constexpr int lo = Lo, hi = Hi;
};

}  // namespace symflow::law
