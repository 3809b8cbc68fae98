#pragma once
// What a loader accepts: every op a graph may name, with its node kind, operand count and
// attributes. Each entry is read from the op's own file — its `name`, and the keys and kinds its
// `visit_attributes` reports — through one representative instantiation of the op; the operand count
// comes from the op's scalar function (elementwise) or its shape rule (kernels). Nothing here
// restates an op's rules. An op added to ops/ is added to the list in `op_schemas()` below.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
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
template <std::size_t>
using square_shape = shape<2, 2>;
template <class Op, std::size_t N>
consteval bool kernel_takes() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return requires { typename Op::template result_shape<square_shape<I>...>; };
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
    }
  } else if constexpr (Kind == node_kind::reduction) {
    s.attributes = {{"axes", attribute_kind::integers}, {"keepdims", attribute_kind::boolean}};
  }
  return s;
}
}  // namespace detail

// Every op a graph value may contain, sorted by name.
inline const std::vector<op_schema>& op_schemas() {
  static const std::vector<op_schema> all = [] {
    using enum node_kind;
    using namespace ops;
    using detail::schema_of;
    std::vector<op_schema> v{
        // leaves that are nodes
        op_schema{"literal", literal, 0, 0, {{"value", attribute_kind::number}, {"static", attribute_kind::boolean}}},
        // elementwise
        schema_of<elementwise, abs_op>(), schema_of<elementwise, add_op>(), schema_of<elementwise, cast_op<float>>(),
        schema_of<elementwise, cos_op>(), schema_of<elementwise, div_op>(), schema_of<elementwise, equal_op>(),
        schema_of<elementwise, exp_op>(), schema_of<elementwise, expand_as_op>(),
        schema_of<elementwise, greater_op>(), schema_of<elementwise, greater_equal_op>(),
        schema_of<elementwise, less_op>(), schema_of<elementwise, less_equal_op>(), schema_of<elementwise, log_op>(),
        schema_of<elementwise, log1p_op>(), schema_of<elementwise, maximum_op>(),
        schema_of<elementwise, minimum_op>(), schema_of<elementwise, mul_op>(), schema_of<elementwise, neg_op>(),
        schema_of<elementwise, not_equal_op>(), schema_of<elementwise, pow_op>(), schema_of<elementwise, relu_op>(),
        schema_of<elementwise, rsqrt_op>(), schema_of<elementwise, sigmoid_op>(), schema_of<elementwise, sign_op>(),
        schema_of<elementwise, sin_op>(), schema_of<elementwise, softplus_op>(), schema_of<elementwise, sqrt_op>(),
        schema_of<elementwise, square_op>(), schema_of<elementwise, sub_op>(), schema_of<elementwise, tanh_op>(),
        schema_of<elementwise, where_op>(),
        // reductions
        schema_of<reduction, sum_op>(), schema_of<reduction, mean_op>(), schema_of<reduction, max_op>(),
        schema_of<reduction, min_op>(),
        // views
        schema_of<view, slice_op<0>>(), schema_of<view, permute_op<0>>(), schema_of<view, reshape_op<shape<1>>>(),
        schema_of<view, expand_dims_op<1u>>(),
        // kernels
        schema_of<kernel, matmul_op>(), schema_of<kernel, concat_op<0>>(), schema_of<kernel, one_hot_op<1, float>>(),
        schema_of<kernel, reduced_count_op<1u, float>>(), schema_of<kernel, scatter_op<0>>(),
    };
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
