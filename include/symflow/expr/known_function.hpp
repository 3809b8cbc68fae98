#pragma once
// A standard function an op may declare that it computes, so that a backend whose libraries provide
// that function fused into other work (cuBLASLt adds a bias and applies relu inside its GEMM) can use
// the library's version without looking at the op's name. The op's own apply() stays the
// definition: a backend that does not know the function, or cannot use it, ignores the declaration.
//   struct relu_op { ...  static constexpr known_function computes = known_function::relu; };
namespace symflow {

enum class known_function {
  none,
  addition,  // a + b, binary, same dtype
  relu,      // max(x, 0), unary
};

template <class Op>
constexpr known_function known_function_of() {
  if constexpr (requires { Op::computes; }) return Op::computes;
  else return known_function::none;
}

}  // namespace symflow
