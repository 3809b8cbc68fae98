#pragma once
// What a loader accepts: every op a graph may name, with its node kind, operand count and
// attributes. Each entry is read from the op's own file — its `name`, and the keys and kinds its
// `visit_attributes` reports — through one representative instantiation of the op; the operand count
// comes from the op's scalar function (elementwise) or its shape rule (kernels). Nothing here
// restates an op's rules. An op added to ops/ is added to `registered_ops` below.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../expr/node.hpp"
#include "../ops/all.hpp"

namespace symflow {

enum class attribute_kind : std::uint8_t { boolean, integer, number, dtype_name, integers };

constexpr std::string_view attribute_kind_name(attribute_kind k) {
  switch (k) {
    case attribute_kind::boolean: return "a boolean";
    case attribute_kind::integer: return "an integer";
    case attribute_kind::number: return "a number";
    case attribute_kind::dtype_name: return "a dtype name";
    case attribute_kind::integers: return "a list of integers";
  }
  return "?";
}

struct attribute_spec {
  std::string_view key;
  attribute_kind kind;
};

inline constexpr std::size_t unbounded_inputs = static_cast<std::size_t>(-1);

struct op_schema {
  std::string_view name;
  node_kind kind;
  std::size_t min_inputs, max_inputs;
  std::vector<attribute_spec> attributes;
};

namespace detail {
// Records the keys and kinds an op's visit_attributes reports.
struct attribute_schema_recorder {
  std::vector<attribute_spec>* out;
  void operator()(std::string_view k, bool) const { out->push_back({k, attribute_kind::boolean}); }
  void operator()(std::string_view k, std::size_t) const { out->push_back({k, attribute_kind::integer}); }
  void operator()(std::string_view k, double) const { out->push_back({k, attribute_kind::number}); }
  void operator()(std::string_view k, dtype) const { out->push_back({k, attribute_kind::dtype_name}); }
  template <std::size_t N>
  void operator()(std::string_view k, const std::array<std::size_t, N>&) const {
    out->push_back({k, attribute_kind::integers});
  }
};

template <class Op>
std::vector<attribute_spec> attribute_schema_of() {
  std::vector<attribute_spec> out;
  if constexpr (requires(Op op) { op.visit_attributes(attribute_schema_recorder{&out}); })
    Op{}.visit_attributes(attribute_schema_recorder{&out});
  return out;
}

template <class Op, std::size_t N>
consteval bool elementwise_takes() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return requires { Op::apply(((void)I, 1.0f)...); };
  }(std::make_index_sequence<N>{});
}
// A struct rather than an alias template: nvcc's front end expands an alias that ignores its
// argument before the pack, and then finds no pack to expand.
template <std::size_t>
struct square_shape {
  using type = shape<2, 2>;
};
template <class Op, std::size_t N>
consteval bool kernel_takes() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return requires { typename Op::template result_shape<typename square_shape<I>::type...>; };
  }(std::make_index_sequence<N>{});
}

template <node_kind Kind, class Op>
op_schema schema_of() {
  op_schema s{Op::name, Kind, 1, 1, attribute_schema_of<Op>()};
  if constexpr (Kind == node_kind::elementwise) {
    constexpr std::size_t n = elementwise_takes<Op, 1>() ? 1 : elementwise_takes<Op, 2>() ? 2 : 3;
    s.min_inputs = s.max_inputs = n;
  } else if constexpr (Kind == node_kind::kernel) {
    // Probed from two operands up: a variadic shape rule (concat) needs at least two.
    if constexpr (kernel_takes<Op, 2>()) {
      s.min_inputs = 2;
      s.max_inputs = kernel_takes<Op, 3>() ? unbounded_inputs : 2;
    } else if constexpr (kernel_takes<Op, 3>()) {
      s.min_inputs = s.max_inputs = 3;
    }
  } else if constexpr (Kind == node_kind::reduction) {
    s.attributes = {{"axes", attribute_kind::integers}, {"keepdims", attribute_kind::boolean}};
  }
  return s;
}
}  // namespace detail

// Every op a graph value may contain: one entry per op, read through one representative
// instantiation (the interpreter's runtime forms take the attributes as values). The schemas below and
// the interpreter's table (graph/runtime/op_table.hpp) both come from this list.
template <node_kind Kind, class Op>
struct op_entry {
  static constexpr node_kind kind = Kind;
  using type = Op;
};
namespace op_list {
using enum node_kind;
using namespace ops;
using registered_ops = std::tuple<
    // elementwise
    op_entry<elementwise, abs_op>, op_entry<elementwise, add_op>, op_entry<elementwise, cast_op<float>>,
    op_entry<elementwise, cos_op>, op_entry<elementwise, div_op>, op_entry<elementwise, equal_op>,
    op_entry<elementwise, exp_op>, op_entry<elementwise, expand_as_op>, op_entry<elementwise, greater_op>,
    op_entry<elementwise, greater_equal_op>, op_entry<elementwise, less_op>, op_entry<elementwise, less_equal_op>,
    op_entry<elementwise, log_op>, op_entry<elementwise, log1p_op>, op_entry<elementwise, maximum_op>,
    op_entry<elementwise, minimum_op>, op_entry<elementwise, mul_op>, op_entry<elementwise, neg_op>,
    op_entry<elementwise, not_equal_op>, op_entry<elementwise, pow_op>, op_entry<elementwise, relu_op>,
    op_entry<elementwise, rsqrt_op>, op_entry<elementwise, sigmoid_op>, op_entry<elementwise, sign_op>,
    op_entry<elementwise, sin_op>, op_entry<elementwise, softplus_op>, op_entry<elementwise, sqrt_op>,
    op_entry<elementwise, square_op>, op_entry<elementwise, sub_op>, op_entry<elementwise, tanh_op>,
    op_entry<elementwise, where_op>,
    // reductions
    op_entry<reduction, sum_op>, op_entry<reduction, mean_op>, op_entry<reduction, max_op>,
    op_entry<reduction, min_op>,
    // views
    op_entry<view, slice_op<0>>, op_entry<view, permute_op<0>>, op_entry<view, reshape_op<shape<1>>>,
    op_entry<view, expand_dims_op<1u>>,
    // kernels
    op_entry<kernel, matmul_op>, op_entry<kernel, concat_op<0>>, op_entry<kernel, one_hot_op<1, float>>,
    op_entry<kernel, reduced_count_op<1u, float>>, op_entry<kernel, scatter_op<0>>,
    op_entry<kernel, conv2d_op<1, padding::same>>, op_entry<kernel, conv2d_backprop_input_op<1, padding::same>>,
    op_entry<kernel, conv2d_backprop_filter_op<1, padding::same>>, op_entry<kernel, max_pool2d_op<2, 2>>,
    op_entry<kernel, max_pool2d_backward_op<2, 2>>, op_entry<kernel, avg_pool2d_op<2, 2>>,
    op_entry<kernel, avg_pool2d_backward_op<2, 2>>, op_entry<kernel, dropout_op>,
    op_entry<kernel, softmax_cross_entropy_op>, op_entry<kernel, softmax_cross_entropy_backward_op>>;
}  // namespace op_list
using op_list::registered_ops;

// Every op a graph value may contain, sorted by name.
inline const std::vector<op_schema>& op_schemas() {
  static const std::vector<op_schema> all = [] {
    std::vector<op_schema> v{
        // leaves that are nodes
        op_schema{"literal", node_kind::literal, 0, 0, {{"value", attribute_kind::number}, {"static", attribute_kind::boolean}}},
    };
    std::apply([&](auto... entry) { (v.push_back(detail::schema_of<decltype(entry)::kind, typename decltype(entry)::type>()), ...); },
               registered_ops{});
    std::sort(v.begin(), v.end(), [](const op_schema& a, const op_schema& b) { return a.name < b.name; });
    return v;
  }();
  return all;
}

// The schema of the op named `name`, or nullptr.
inline const op_schema* find_op_schema(std::string_view name) {
  const auto& all = op_schemas();
  auto it = std::lower_bound(all.begin(), all.end(), name,
                             [](const op_schema& s, std::string_view n) { return s.name < n; });
  return it != all.end() && it->name == name ? &*it : nullptr;
}

}  // namespace symflow
