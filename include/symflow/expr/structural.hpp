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
// by their own names: "placeholder 'x' (model.cpp:3)".
template <expression E>
std::string describe(const E& e) {
  std::string_view own = E::op_name;
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) own = E::name.view();
  return std::string(E::op_name) + " '" + e.info.scoped_name(own) + "' (" + e.info.location_string() + ")";
}

// describe(node), deferred: shape rules receive it and format it only when they throw, so a
// successful evaluation builds no strings (and allocates nothing for them).
template <expression E>
struct node_description {
  const E* node;
  operator std::string() const { return describe(*node); }
  friend std::string operator+(const node_description& d, const char* text) { return std::string(d) + text; }
  friend std::string operator+(const node_description& d, const std::string& text) { return std::string(d) + text; }
};

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
};

// The condition of the static_assert for structural ops: prints the op and the operand shapes.
template <class Op, shape_spec... OperandShapes>
struct operand_shapes_valid_for_op {
  static constexpr bool value = Op::template shapes_ok<OperandShapes...>;  // own member: see broadcast.hpp
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
  if constexpr (operand_shapes_valid_for_op<Op, shape_of<Args>...>::value)
    return kernel_node<Op, Args...>{{}, operands_of_values(args...), op, capture_node_info(where)};
}

}  // namespace symflow
