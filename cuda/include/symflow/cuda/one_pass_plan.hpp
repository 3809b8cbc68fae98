#pragma once
// Which outputs of a multi-output evaluation can share one kernel (compute_outputs, multi_output.hpp):
// elementwise outputs and full reductions of one floating-point dtype whose static shapes allow the
// same frame, decided at compile time (whether the frames agree is checked at run time); the frame
// each member loops over; and the reduction ops the finishing kernel applies.
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include <symflow/core/shape.hpp>
#include <symflow/expr/node.hpp>
#include <symflow/expr/reduction.hpp>

#include "device.hpp"
#include "device_leaf.hpp"
#include "elementwise_evaluator.hpp"
#include "materialised_evaluators.hpp"

namespace symflow::cuda {
namespace detail {

template <class Ev>
inline constexpr bool is_full_reduction_v = false;
template <class Node, class C>
inline constexpr bool is_full_reduction_v<reduction_eval<Node, C>> = [] {
  for (bool m : Node::mask)
    if (!m) return false;
  return true;
}();
template <class Ev>
inline constexpr bool is_elementwise_eval_v = false;
template <class Op, class T, std::size_t R, class... C>
inline constexpr bool is_elementwise_eval_v<elementwise_eval<Op, T, R, C...>> = true;

// The frame an output would loop over in a one-pass group, as a static shape: a full reduction's
// operand, anything else's own shape.
template <class E>
struct static_frame {
  using type = shape_of<E>;
};
template <class Op, class A, unsigned Bits, bool Keep>
struct static_frame<reduction<Op, A, Bits, Keep>> {
  using type = shape_of<A>;
};
// Whether two static shapes could describe the same frame at run time (dyn matches anything).
template <class S1, class S2>
constexpr bool frames_may_agree() {
  constexpr std::size_t r1 = S1::rank == 0 ? 1 : S1::rank, r2 = S2::rank == 0 ? 1 : S2::rank;
  if constexpr (r1 != r2) {
    return false;
  } else if constexpr (S1::rank == 0 || S2::rank == 0) {
    return true;
  } else {
    for (std::size_t i = 0; i < S1::rank; ++i) {
      const std::size_t a = S1::extents[i], b = S2::extents[i];
      if (a != dyn && b != dyn && a != b) return false;
    }
    return true;
  }
}

// The outputs that run as one pass: elementwise outputs and full reductions of the first such
// output's (floating-point) dtype, whose static shapes allow the same frame. Whether the frames
// agree is known only at run time.
template <class Exprs, class... Ev>
struct one_pass_plan;
template <class... E, class... Ev>
struct one_pass_plan<std::tuple<E...>, Ev...> {
  static constexpr std::size_t n = sizeof...(Ev);
  static constexpr std::array<bool, n> candidate{
      ((is_full_reduction_v<Ev> || is_elementwise_eval_v<Ev>) && std::is_floating_point_v<typename Ev::value_type>)...};
  static constexpr std::size_t first = [] {
    for (std::size_t i = 0; i < n; ++i)
      if (candidate[i]) return i;
    return n;
  }();
  using group_type =
      std::conditional_t<(first < n), std::tuple_element_t<(first < n ? first : 0), std::tuple<typename Ev::value_type...>>,
                         void>;
  using first_frame = typename static_frame<std::tuple_element_t<(first < n ? first : 0), std::tuple<E...>>>::type;
  static constexpr std::array<bool, n> in_group = [] {
    std::array<bool, n> g{};
    if constexpr (first < n) {
      constexpr std::array<bool, n> same{
          (std::is_same_v<typename Ev::value_type, group_type> &&
           frames_may_agree<first_frame, typename static_frame<E>::type>())...};
      for (std::size_t i = 0; i < n; ++i) g[i] = candidate[i] && same[i];
    }
    return g;
  }();
  static constexpr std::size_t size = [] {
    std::size_t k = 0;
    for (bool b : in_group) k += b;
    return k;
  }();
  static constexpr std::array<std::size_t, size> members = [] {
    std::array<std::size_t, size> m{};
    for (std::size_t i = 0, k = 0; i < n; ++i)
      if (in_group[i]) m[k++] = i;
    return m;
  }();
};

// The frame a one-pass member runs over: a map's result, a full reduction's operand.
template <class Ev>
group_frame loop_frame(const Ev& ev) {
  if constexpr (is_full_reduction_v<Ev>) return frame_of<std::remove_cvref_t<decltype(ev.operand)>::rank>(ev.operand.extents);
  else return frame_of<Ev::rank>(ev.extents);
}
inline bool same_frame(const group_frame& a, const group_frame& b) {
  if (a.rank != b.rank) return false;
  for (std::size_t i = 0; i < a.rank; ++i)
    if (a.extents[i] != b.extents[i]) return false;
  return true;
}

template <class Ev>
auto& one_pass_operand(Ev& ev) {
  if constexpr (is_full_reduction_v<Ev>) return ev.operand;
  else return ev;
}

template <class... Ops>
struct op_list {};
// The reduction op of each full reduction among the members, in member order.
template <class Ev>
struct reduce_op_of {
  using type = op_list<>;
};
template <class Node, class C>
struct reduce_op_of<reduction_eval<Node, C>> {
  using type = op_list<dev::canonical_t<typename Node::op_type>>;
};
template <class... Lists>
struct concat_ops {
  using type = op_list<>;
};
template <class... A>
struct concat_ops<op_list<A...>> {
  using type = op_list<A...>;
};
template <class... A, class... B, class... Rest>
struct concat_ops<op_list<A...>, op_list<B...>, Rest...> {
  using type = typename concat_ops<op_list<A..., B...>, Rest...>::type;
};
template <class... Ev>
using reduce_ops_t = typename concat_ops<typename reduce_op_of<Ev>::type...>::type;

}  // namespace detail
}  // namespace symflow::cuda
