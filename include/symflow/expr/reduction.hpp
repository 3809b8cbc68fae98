#pragma once
#include <vector>
#include <array>
#include <cstdint>
#include <utility>

#include "fixed_value.hpp"
#include "node.hpp"

namespace symflow {

// Axis lists for reductions: sum(x) reduces all axes, sum(x, axes<1>) one, sum(x, axes<-1>, keepdims).
template <int... A>
struct axes_t {};
template <int... A>
inline constexpr axes_t<A...> axes{};
// Whether a reduction's result is independent of the order its elements are combined in (max, min:
// their op says so). Others (sum, mean) round differently in another order: the graph interpreter
// accumulates their floating sums in double.
template <class Op>
inline constexpr bool order_independent_v = requires { requires Op::order_independent; };

struct keepdims_t {};
inline constexpr keepdims_t keepdims{};

template <std::size_t Rank, int... A>
consteval bool axes_in_range() {
  return ((A >= -int(Rank) && A < int(Rank)) && ...);
}

// Reduced axes as bits (bit i = axis i). A plain integer rather than a std::array template argument:
// g++ 12 conflates std::array<bool, N> template arguments that differ only in their values.
template <std::size_t Rank, int... A>
consteval unsigned reduced_axes_bits() {
  if constexpr (sizeof...(A) == 0) return (1u << Rank) - 1;
  else return ((1u << unsigned(A < 0 ? A + int(Rank) : A)) | ...);
}
template <std::size_t Rank>
consteval std::array<bool, Rank> mask_of_bits(unsigned bits) {
  std::array<bool, Rank> mask{};
  for (std::size_t i = 0; i < Rank; ++i) mask[i] = (bits >> i) & 1u;
  return mask;
}

template <shape_spec S, unsigned Bits, bool KeepDims>
consteval auto reduced_extents() {
  constexpr auto Mask = mask_of_bits<S::rank>(Bits);
  constexpr std::size_t kept = [](const auto& mask) {
    std::size_t n = 0;
    for (bool r : mask) n += (!r || KeepDims) ? 1 : 0;
    return n;
  }(Mask);
  std::array<std::size_t, kept> out{};
  std::size_t j = 0;
  for (std::size_t i = 0; i < S::rank; ++i) {
    if (!Mask[i]) out[j++] = S::extents[i];
    else if (KeepDims) out[j++] = 1;
  }
  return out;
}

// Reduces its operand over the axes marked in Mask. Op supplies identity, combine, SIMD combine and
// horizontal reduction, an optional finish step (mean divides by the count) and its derivative rule.
template <class Op, expression A, unsigned AxesBits, bool KeepDims>
struct reduction : expression_tag {
  static constexpr node_kind kind = node_kind::reduction;
  static constexpr std::string_view op_name = Op::name;
  using op_type = Op;
  using operand_type = A;
  using value_type = value_type_of<A>;
  using shape_type = shape_from_array_t<reduced_extents<shape_of<A>, AxesBits, KeepDims>()>;
  static constexpr std::size_t rank = shape_type::rank;
  static constexpr auto mask = mask_of_bits<shape_of<A>::rank>(AxesBits);
  static constexpr bool keep_dims = KeepDims;
  operand_list<A> operands;
  const std::tuple<A>& args() const { return operands.get(); }
  node_info info;
  static constexpr bool destroyed_with_operands = true;  // see operand_list
};

// What a reduction's derivative rule is given to reduce an operand-shaped value over the node's own
// axes, keeping them as extent 1: over(ops::sum_op{}, e). Max and min count their ties with it. In a
// runtime rule fragment (runtime/grad.hpp) the stand-in operand has rank 1 and the reduction is
// over its axis 0; splicing the fragment into a graph gives it the node's axes.
template <unsigned AxesBits>
struct over_reduced_axes {
  template <class Op, expression E>
  auto operator()(Op, const E& e) const {
    return reduction<Op, E, AxesBits, true>{{}, operands_of_values(e), {}};
  }
};

// The runtime extents of a reduction node's result from its operand's, and how many operand
// elements each result combines. Shared by every backend.
template <class Node>
extents_t<Node::rank> reduction_result_extents(const extents_t<Node::mask.size()>& operand,
                                               std::size_t& reduced_count) {
  extents_t<Node::rank> out{};
  reduced_count = 1;
  for (std::size_t i = 0, j = 0; i < operand.size(); ++i) {
    if (Node::mask[i]) {
      reduced_count *= operand[i];
      if (Node::keep_dims) out[j++] = 1;
    } else {
      out[j++] = operand[i];
    }
  }
  return out;
}

template <class Op, shape_spec S, int... Axes>
struct reduction_axes_in_range_for_op {
  static constexpr bool value = axes_in_range<S::rank, Axes...>();  // own member: see broadcast.hpp
};

template <class Op, expression A, int... Axes, class... Keep>
auto make_reduction(const A& a, axes_t<Axes...>, source_site where, Keep...) {
  constexpr bool keep = (std::is_same_v<Keep, keepdims_t> || ...);
  static_assert(reduction_axes_in_range_for_op<Op, shape_of<A>, Axes...>::value,
                "symflow: a reduction axis is out of range for the operand's rank (op, shape and axes below)");
  if constexpr (reduction_axes_in_range_for_op<Op, shape_of<A>, Axes...>::value)
    return reduction<Op, A, reduced_axes_bits<rank_of<A>, Axes...>(), keep>{{}, operands_of_values(a),
                                                                         capture_node_info(where)};
}

// The callable behind sum, mean, max and min: sum(x), sum(x, axes<0, 2>), sum(x, axes<-1>, keepdims).
template <class Op>
struct reduction_function {
  template <expression A>
  auto operator()(const A& a, source_site where = source_site::current()) const {
    return make_reduction<Op>(a, axes_t<>{}, where);
  }
  template <expression A>
  auto operator()(const A& a, keepdims_t k, source_site where = source_site::current()) const {
    return make_reduction<Op>(a, axes_t<>{}, where, k);
  }
  template <expression A, int... Axes>
  auto operator()(const A& a, axes_t<Axes...> ax,
                  source_site where = source_site::current()) const {
    return make_reduction<Op>(a, ax, where);
  }
  template <expression A, int... Axes>
  auto operator()(const A& a, axes_t<Axes...> ax, keepdims_t k,
                  source_site where = source_site::current()) const {
    return make_reduction<Op>(a, ax, where, k);
  }
  // Axes as a derivative rule's attribute value (expr/derivative_rule.hpp), without keepdims.
  template <expression A, integer_list Axes>
  auto operator()(const A& a, fixed<Axes>, source_site where = source_site::current()) const {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return make_reduction<Op>(a, axes_t<int(Axes[I])...>{}, where);
    }(std::make_index_sequence<Axes.size()>{});
  }
  // Other operands (a graph builder's handles, runtime/builder.hpp) reduce through the
  // reduce_value function found next to their type, with the axes as values.
  template <class A, class... Rest>
    requires(!expression<A>) && requires(const A& a) { reduce_value(Op{}, a, std::vector<int>{}, false); }
  auto operator()(const A& a, const Rest&... rest) const {
    std::vector<int> axes;
    bool keep = false;
    auto read = [&]<class R>(const R& r) {
      if constexpr (std::is_same_v<R, keepdims_t>) keep = true;
      else if constexpr (std::is_same_v<R, std::vector<std::int64_t>>) axes.assign(r.begin(), r.end());
      else axes = axes_of(R{});
    };
    (read(rest), ...);
    return reduce_value(Op{}, a, axes, keep);
  }

 private:
  template <int... Axes>
  static std::vector<int> axes_of(axes_t<Axes...>) {
    return {Axes...};
  }
};

}  // namespace symflow
