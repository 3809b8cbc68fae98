#pragma once
#include <string>
#include <tuple>

#include "../core/error.hpp"
#include "node.hpp"

namespace symflow {

// Where a value's elements are: extents, strides (in elements) and the offset of the first element.
template <std::size_t Rank>
struct layout {
  extents_t<Rank> extents{};
  extents_t<Rank> strides{};
  std::size_t offset = 0;
};

// "reshape 'dense1/reshape' (model.cpp:12)": how errors name a node. Placeholders and variables go
// by their own names: "placeholder 'x' (model.cpp:3)". The text is built by one function for all
// node types; the template only reads the node's names (as local constants: an odr-use of a node's
// static op_name would emit one object per node type, named after the whole model below it).
inline std::string describe_node(std::string_view op_name, std::string_view own, const node_info& info) {
  return std::string(op_name) + " '" + info.scoped_name(own) + "' (" + info.location_string() + ")";
}

// describe(node), deferred: shape rules receive it and format it only when they throw, so a
// successful evaluation builds no strings (and allocates nothing for them).
struct node_description {
  std::string_view op_name, own;
  const node_info* info;
  operator std::string() const { return describe_node(op_name, own, *info); }
  friend std::string operator+(const node_description& d, const char* text) { return std::string(d) + text; }
  friend std::string operator+(const node_description& d, const std::string& text) { return std::string(d) + text; }
};

template <expression E>
node_description describe_later(const E& e) {
  constexpr std::string_view op_name = E::op_name;
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) {
    constexpr std::string_view own = E::name.view();
    return {op_name, own, &e.info};
  } else {
    return {op_name, op_name, &e.info};
  }
}

template <expression E>
std::string describe(const E& e) {
  return std::string(describe_later(e));
}

// A node that re-describes its operand's memory (transpose, reshape, slice): no arithmetic. Op
// supplies the static shape rule, the runtime extents rule and the layout mapping.
template <class Op, expression A>
struct view_node : expression_tag {
  static constexpr node_kind kind = node_kind::view;
  static constexpr std::string_view op_name = Op::name;
  using op_type = Op;
  using value_type = value_type_of<A>;
  using shape_type = typename Op::template result_shape<shape_of<A>>;
  static constexpr std::size_t rank = shape_type::rank;
  operand_list<A> operands;
  const std::tuple<A>& args() const { return operands.get(); }
  Op op;
  node_info info;
  static constexpr bool destroyed_with_operands = std::is_trivially_destructible_v<Op>;  // see operand_list
};

// A node whose result its op computes with a kernel of its own (matmul, concat, one_hot).
template <class Op, expression... Args>
struct kernel_node : expression_tag {
  static constexpr node_kind kind = node_kind::kernel;
  static constexpr std::string_view op_name = Op::name;
  using op_type = Op;
  using value_type = typename Op::template result_type<value_type_of<Args>...>;
  using shape_type = typename Op::template result_shape<shape_of<Args>...>;
  static constexpr std::size_t rank = shape_type::rank;
  operand_list<Args...> operands;
  const std::tuple<Args...>& args() const { return operands.get(); }
  Op op;
  node_info info;
  static constexpr bool destroyed_with_operands = std::is_trivially_destructible_v<Op>;  // see operand_list
};

// The condition of the static_assert for structural ops: prints the op and the operand shapes.
template <class Op, shape_spec... OperandShapes>
struct operand_shapes_valid_for_op {
  static constexpr bool value = Op::template shapes_ok<OperandShapes...>;  // own member: see broadcast.hpp
};

// The condition of the static_assert for a kernel's operand dtypes: its op's dtype rule (`accepts`,
// which the graph loaders and the interpreter read too, ir/op_registry.hpp; every listed kernel
// declares one), true for kernels without one (the runtime's program ops take any leaves).
template <class Op, class... Ts>
struct operand_dtypes_valid_for_kernel {
  static constexpr bool value = [] {
    if constexpr (requires { Op::template accepts<Ts...>; }) return bool(Op::template accepts<Ts...>);
    else return true;
  }();
};

template <class Op, expression A>
auto make_view(Op op, source_site where, const A& a) {
  static_assert(operand_shapes_valid_for_op<Op, shape_of<A>>::value,
                "symflow: the operand's shape does not fit this op (op and shape below)");
  if constexpr (operand_shapes_valid_for_op<Op, shape_of<A>>::value)
    return view_node<Op, A>{{}, operands_of_values(a), op, capture_node_info(where)};
}

template <class Op, expression... Args>
auto make_kernel(Op op, source_site where, const Args&... args) {
  static_assert(operand_shapes_valid_for_op<Op, shape_of<Args>...>::value,
                "symflow: operand shapes do not fit this op (op and shapes below)");
  static_assert(operand_dtypes_valid_for_kernel<Op, value_type_of<Args>...>::value,
                "symflow: operand dtypes do not fit this op (op and dtypes below)");
  if constexpr (operand_shapes_valid_for_op<Op, shape_of<Args>...>::value &&
                operand_dtypes_valid_for_kernel<Op, value_type_of<Args>...>::value)
    return kernel_node<Op, Args...>{{}, operands_of_values(args...), op, capture_node_info(where)};
}

}  // namespace symflow
