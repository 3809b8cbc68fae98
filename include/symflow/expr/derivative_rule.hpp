#pragma once
// The derivative rule of a view or kernel op, written once in the op's file and run in two places:
//
//   static auto derivative(const auto& self, const auto& g, const auto& y, const auto&... x);
//
// returns one adjoint or no_gradient{} per operand, as a tuple (std::tuple{...} where more than one
// builds nodes: braces evaluate left to right, so a graph's nodes come in the same order on every
// compiler). On expression types (symbolic/grad.hpp) `self` is the op object, whose attributes are
// template arguments or members, and g, y, x are expressions; the result is a typed expression.
// When a graph value is differentiated (runtime/grad.hpp) `self` is a node_op holding the node's
// attributes, and g, y, x are graph handles; the result is graph nodes. The rule builds its result
// only with functions that have both forms: the ops' own functions (matmul, transpose, sum, slice,
// ...) and the helpers below, whose graph-handle forms are in runtime/rule_context.hpp. Attributes
// reach the rule as values of either kind: `fixed<V>` (known at compile time, so it can become a
// template argument again) or a plain value; `lift` computes on both alike.
//
// An op whose operand count varies (concat) says so with `static constexpr bool
// derivative_of_parts = true`: its rule takes the operands as one list (a tuple here, a vector of
// handles at run time) and maps over it with map_parts.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "fixed_string.hpp"
#include "fixed_value.hpp"
#include "reduction.hpp"
#include "structural.hpp"

namespace symflow {

namespace rule_detail {
template <class T>
constexpr decltype(auto) plain(const T& v) {
  if constexpr (is_fixed_v<T>) return T::value;
  else return v;
}
}  // namespace rule_detail

// f applied to attribute values: at compile time, giving a fixed value, when every argument is
// fixed; else at run time. F is a stateless function object (a lambda without captures).
template <class F, class... A>
constexpr auto lift(F f, const A&... a) {
  if constexpr ((is_fixed_v<A> && ...)) return fixed<F{}(A::value...)>{};
  else return f(rule_detail::plain(a)...);
}

// then_(args...) if the condition holds, else else_(args...): chosen at compile time for a fixed
// condition (only that branch is instantiated: the branches are generic lambdas that reach the
// rule's values only through args), at run time for a plain one (both must give the same type).
template <class C, class Then, class Else, class... Args>
auto choose(const C& condition, Then&& then_, Else&& else_, const Args&... args) {
  if constexpr (is_fixed_v<C>) {
    if constexpr (C::value) return then_(args...);
    else return else_(args...);
  } else {
    if (condition) return then_(args...);
    return else_(args...);
  }
}

// Whether a rule runs on expression types (self is an op object) or on graph handles (self is a
// node_op: runtime/rule_context.hpp specialises this). A rule that cannot be differentiated
// further static_asserts on it and throws otherwise.
template <class Self>
inline constexpr bool rule_on_types_v = true;

// Attributes of an op object read by key through its own visit_attributes (which must be
// constexpr for the attributes a rule reads): integers<"perm">(self), integer<"axis">(self).
namespace rule_detail {
template <class Op, fixed_string Key>
consteval integer_list read_integers() {
  integer_list out;
  bool found = false;
  Op::visit_attributes([&](std::string_view k, const auto& v) {
    if constexpr (requires { v.size(); v[0]; }) {
      if (k == Key.view()) {
        found = true;
        for (std::size_t i = 0; i < v.size(); ++i) out.items[out.count++] = std::int64_t(v[i]);
      }
    }
  });
  if (!found) throw "no list attribute by this key";  // not a constant expression: a compile error
  return out;
}
template <class Op, fixed_string Key>
consteval std::int64_t read_integer() {
  std::int64_t out = 0;
  bool found = false;
  Op::visit_attributes([&](std::string_view k, const auto& v) {
    if constexpr (std::is_integral_v<std::remove_cvref_t<decltype(v)>>) {
      if (k == Key.view()) {
        found = true;
        out = std::int64_t(v);
      }
    }
  });
  if (!found) throw "no integer attribute by this key";
  return out;
}
}  // namespace rule_detail

template <fixed_string Key, class Op>
  requires rule_on_types_v<Op>
constexpr auto integers(const Op&) {
  return fixed<rule_detail::read_integers<Op, Key>()>{};
}
template <fixed_string Key, class Op>
  requires rule_on_types_v<Op>
constexpr auto integer(const Op&) {
  return fixed<rule_detail::read_integer<Op, Key>()>{};
}

// The op of the same family with the same attributes: sibling<conv2d_backprop_input_op>(self) on a
// conv2d_op<Stride, Padding> is conv2d_backprop_input_op<Stride, Padding>. Attributes held as
// members travel through the op's members() (a tuple, in its sibling's member order).
template <template <auto...> class To, template <auto...> class From, auto... A>
constexpr auto sibling(const From<A...>& self) {
  if constexpr (requires { self.members(); }) return std::make_from_tuple<To<A...>>(self.members());
  else return To<A...>{};
}

// The same op with the integer attribute Key set to `value` (a fixed<V>), for adjoints that are the
// op itself with another attribute (runtime/rule_context.hpp has the graph-node form). The op names
// its variants: `template <fixed_string Key, std::int64_t V> using with_attribute = ...;`.
template <fixed_string Key, class Op, class V>
  requires rule_on_types_v<Op>
constexpr auto with_integer(const Op&, V) {
  static_assert(is_fixed_v<V>, "symflow: with_integer: on typed ops the new value must be fixed");
  return typename Op::template with_attribute<Key, std::int64_t(V::value)>{};
}

// Applying an op object to expressions (on graph handles: runtime/rule_context.hpp).
template <class Op, expression X>
auto apply_view(const Op& op, const X& x) {
  return make_view(op, source_site{}, x);
}
template <class Op, expression... X>
auto apply_kernel(const Op& op, const X&... x) {
  return make_kernel(op, source_site{}, x...);
}

// A value's rank and one of its extents, as attribute values: fixed here.
template <expression X>
constexpr auto rank_value(const X&) {
  return fixed<rank_of<X>>{};
}
// A value's extents as an attribute value (-1 where dyn).
template <expression X>
constexpr auto shape_value(const X&) {
  constexpr integer_list extents = [] {
    integer_list out;
    for (std::size_t e : shape_of<X>::extents) out[out.count++] = e == dyn ? -1 : std::int64_t(e);
    return out;
  }();
  return fixed<extents>{};
}
// The extent along `axis` where a rule needs it to be known (an offset, a class count).
template <expression X, auto Axis>
constexpr auto known_extent(const X&, fixed<Axis>) {
  constexpr std::size_t e = shape_of<X>::extents[std::size_t(Axis)];
  static_assert(e != dyn, "symflow: this gradient needs a static extent along the axis named below (it is dyn)");
  return fixed<std::int64_t(e)>{};
}

// The adjoints of a view's or kernel's operands on expression types: its rule with the op object
// as self (symbolic/grad.hpp, symbolic/reverse_sweep.hpp).
// Kernels that are not graph ops (hold, a runtime program's outputs) keep a typed-only `gradient`.
template <class Op, class G, class Y, class... X>
auto op_derivative(const Op& op, const G& g, const Y& y, const X&... x) {
  if constexpr (requires { Op::derivative_of_parts; }) return Op::derivative(op, g, y, std::tuple<const X&...>(x...));
  else if constexpr (requires { Op::derivative(op, g, y, x...); }) return Op::derivative(op, g, y, x...);
  else if constexpr (requires { op.gradient(g, y, x...); }) return op.gradient(g, y, x...);
  else return op.gradient(g, x...);
}

// The operands of a derivative_of_parts op, mapped in order (braced initialisation runs f on the
// parts left to right, so f may carry a running offset).
template <class... P, class F>
auto map_parts(const std::tuple<P...>& parts, F&& f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<decltype(f(std::get<I>(parts)))...>{f(std::get<I>(parts))...};
  }(std::index_sequence_for<P...>{});
}

}  // namespace symflow
