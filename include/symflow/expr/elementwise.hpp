#pragma once
#include <tuple>
#include <type_traits>

#include "broadcast.hpp"
#include "diagnostics.hpp"
#include "leaves.hpp"
#include "node.hpp"

namespace symflow {

// An n-ary map over broadcast operands. The op type Op supplies everything specific: its name, the
// dtype rule, the scalar function, an optional SIMD packet function and its derivative rule.
template <class Op, expression... Args>
struct elementwise : expression_tag {
  static constexpr node_kind kind = node_kind::elementwise;
  static constexpr std::string_view op_name = Op::name;
  using op_type = Op;
  using value_type = typename Op::template result_type<typename Args::value_type...>;
  using shape_type = typename broadcast_all<typename Args::shape_type...>::type;
  static constexpr std::size_t rank = shape_type::rank;
  operand_list<Args...> operands;
  const std::tuple<Args...>& args() const { return operands.get(); }
  [[no_unique_address]] Op op;
  node_info info;
  // Destroying the node releases its operands and nothing else (see operand_list).
  static constexpr bool destroyed_with_operands = std::is_trivially_destructible_v<Op>;
};

template <class E>
inline constexpr bool is_elementwise_v = false;
template <class Op, class... A>
inline constexpr bool is_elementwise_v<elementwise<Op, A...>> = true;

// elementwise<Op, X> for the given op (rules such as -(-x) -> x look for it).
template <class E, class Op>
inline constexpr bool is_unary_node_v = false;
template <class Op, class X>
inline constexpr bool is_unary_node_v<elementwise<Op, X>, Op> = true;

namespace ops {
struct mul_op;
}
template <class E>
inline constexpr bool is_mul_v = false;
template <class A, class B>
inline constexpr bool is_mul_v<elementwise<ops::mul_op, A, B>> = true;

// Dtype rules ops pick from.
struct same_dtype_result {
  template <class T, class... Rest>
  using result_type = T;
  template <class T, class... Rest>
  static constexpr bool accepts = (std::is_same_v<T, Rest> && ...);
};
struct floating_result : same_dtype_result {
  template <class T, class... Rest>
  static constexpr bool accepts = std::is_floating_point_v<T> && (std::is_same_v<T, Rest> && ...);
};
struct mask_result {
  template <class... T>
  using result_type = bool;
  template <class T, class... Rest>
  static constexpr bool accepts = (std::is_same_v<T, Rest> && ...);
};

template <class Op, class... Ts>
struct operand_dtypes_accepted_by_op {
  static constexpr bool value = Op::template accepts<Ts...>;  // own member: see broadcast.hpp
};

// Builds an elementwise node after checking dtypes and static shapes. A failed check is one error
// whose first line names the op, the dtypes and the shapes (expr/diagnostics.hpp).
template <class Op, expression... Args>
auto make_elementwise(Op op, source_site where, const Args&... args) {
  if constexpr (!operand_dtypes_accepted_by_op<Op, typename Args::value_type...>::value) {
    constexpr auto message = diag::elementwise_dtype_message<Op, typename Args::value_type...>();
    (void)sizeof(compile_error<diag::trim<message.size + 1>(message)>);
    return invalid_operands_result<typename std::tuple_element_t<0, std::tuple<Args...>>::value_type,
                                   std::max({Args::rank...})>{};
  } else if constexpr (!operand_shapes_broadcast_for_op<Op, typename Args::shape_type...>::value) {
    constexpr auto message = diag::broadcast_message<Op, Args...>();
    (void)sizeof(compile_error<diag::trim<message.size + 1>(message)>);
    return invalid_operands_result<typename elementwise<Op, Args...>::value_type, std::max({Args::rank...})>{};
  } else {
    return elementwise<Op, Args...>{{}, operands_of_values(args...), op, capture_node_info(where)};
  }
}

// Unary ops: f(x) with a source location.
template <class Op, class X>
auto make_unary(const X& x, source_site where, Op op = {}) {
  static_assert(unary_operand<X>, "symflow: this op takes an expression");
  if constexpr (value_handle<X>) return apply_value(op, x);
  else return make_elementwise(op, where, x);
}

// Binary ops: either side may be an arithmetic scalar, which takes the other side's dtype.
template <class Op, class A, class B>
auto make_binary(const A& a, const B& b, source_site where = {}, Op op = {}) {
  static_assert(expression<A> || expression<B> || value_handle<A> || value_handle<B>,
                "symflow: at least one operand must be an expression");
  if constexpr (value_handle<A> || value_handle<B>) {
    return apply_value(op, a, b);
  } else if constexpr (expression<A>) {
    return make_elementwise(op, where, a, as_expression<value_type_of<A>>(b));
  } else {
    return make_elementwise(op, where, as_expression<value_type_of<B>>(a), b);
  }
}

template <class A, class B>
concept binary_operands = (operand<A> || value_handle<A>) && (operand<B> || value_handle<B>) &&
                          (expression<A> || expression<B> || value_handle<A> || value_handle<B>);

}  // namespace symflow
