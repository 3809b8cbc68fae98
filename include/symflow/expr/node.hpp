#pragma once
#include <concepts>
#include <cstddef>
#include <type_traits>

#include "../core/dtype.hpp"
#include "../core/config.hpp"
#include "../core/shape.hpp"
#include "node_info.hpp"
#include "operand_list.hpp"

namespace symflow {

// How an evaluator treats a node. Backends dispatch on this, never on an op's name.
enum class node_kind {
  placeholder,  // fed at evaluation
  variable,     // read from a parameter store (or fed)
  constant,     // holds a tensor
  literal,      // a scalar value, known at run time or at compile time
  elementwise,  // n-ary map with broadcasting: fuses
  reduction,    // sum/mean/max/min over axes: fuses with its operand's elementwise work
  view,         // a new layout (extents, strides, offset) over its operand's memory: no arithmetic
  kernel,       // materialises its result with its own kernel (matmul, concat, one_hot)
  accumulation, // the sum of a run-time number of terms of one type (a node's adjoint, summed over its users)
  reference,    // stands for another node object whose type it does not contain (expr/reference.hpp)
};

// Base of every expression node; an empty tag so nodes stay aggregates of their data.
struct expression_tag {};

template <class E>
concept expression = std::derived_from<std::remove_cvref_t<E>, expression_tag>;

template <expression E>
using value_type_of = typename std::remove_cvref_t<E>::value_type;
template <expression E>
using shape_of = typename std::remove_cvref_t<E>::shape_type;
template <expression E>
inline constexpr std::size_t rank_of = shape_of<E>::rank;

// The operand types of a node (an empty tuple for leaves), and the identity of a node object: copies
// of one node share it; nodes built separately never do (leaves have none: nullptr).
template <class E>
concept has_operands = requires(const E& e) { e.args(); };
template <class E>
struct operand_types {
  using type = std::tuple<>;
};
template <has_operands E>
struct operand_types<E> {
  using type = std::remove_cvref_t<decltype(std::declval<const E&>().args())>;
};
template <class E>
using operands_of = typename operand_types<std::remove_cvref_t<E>>::type;
template <class E>
const void* node_identity(const E& e) {
  if constexpr (requires { e.identity(); }) return e.identity();
  else if constexpr (has_operands<E>) return e.operands.identity();
  else return nullptr;
}

// What a derivative rule returns for an operand that carries no gradient (a mask, a label), and
// what differentiation yields for a subexpression that does not depend on the variable.
struct no_gradient {};
template <class T>
inline constexpr bool is_no_gradient_v = std::is_same_v<std::remove_cvref_t<T>, no_gradient>;

// Anything an op accepts as an operand: an expression or a plain arithmetic scalar.
template <class X>
concept operand = expression<X> || std::is_arithmetic_v<std::remove_cvref_t<X>>;

// A value of a graph built at run time (runtime/builder.hpp's graph_handle). Each op's
// function serves such values too: it applies the op by name through the `apply_value(op, x...)`
// function found next to the value's type, so no layer above the ops lists them again.
struct probe_op {
  static constexpr std::string_view name = "probe";
};
template <class X>
concept value_handle = !expression<X> && requires(const X& x) { apply_value(probe_op{}, x); };
// What a unary op's function accepts.
template <class X>
concept unary_operand = expression<X> || value_handle<X>;

// Human-readable type of an expression, e.g. "f32[?,784]".
template <expression E>
std::string type_string() {
  return std::string(dtype_name(dtype_v<value_type_of<E>>)) + shape_string<shape_of<E>>();
}

}  // namespace symflow
