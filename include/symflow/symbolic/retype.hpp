#pragma once
#include <memory>
#include <tuple>
#include <type_traits>

#include "../core/tensor.hpp"
#include "../expr/elementwise.hpp"
#include "../expr/leaves.hpp"
#include "../expr/reduction.hpp"
#include "../expr/structural.hpp"

namespace symflow {

namespace detail {
template <class U, class T>
using float_as = std::conditional_t<std::is_floating_point_v<T>, U, T>;

template <class U, class Op>
auto retyped_op(const Op& op) {
  if constexpr (requires { typename Op::template with_float_dtype<U>; }) return typename Op::template with_float_dtype<U>{};
  else return op;
}

template <class U, class Op, class... A, class... R>
auto rebuild_retyped(const elementwise<Op, A...>& e, const R&... r) {
  auto op = retyped_op<U>(e.op);
  return elementwise<decltype(op), R...>{{}, operands_of_values(r...), op, e.info};
}
template <class U, class Op, class A, unsigned Bits, bool Keep, class R>
auto rebuild_retyped(const reduction<Op, A, Bits, Keep>& e, const R& r) {
  return reduction<Op, R, Bits, Keep>{{}, operands_of_values(r), e.info};
}
template <class U, class Op, class A, class R>
auto rebuild_retyped(const view_node<Op, A>& e, const R& r) {
  return view_node<Op, R>{{}, operands_of_values(r), e.op, e.info};
}
template <class U, class Op, class... A, class... R>
auto rebuild_retyped(const kernel_node<Op, A...>& e, const R&... r) {
  auto op = retyped_op<U>(e.op);
  return kernel_node<decltype(op), R...>{{}, operands_of_values(r...), op, e.info};
}
}  // namespace detail

// The same expression computing in floating dtype U wherever it computed in a floating dtype:
// leaves, literals and constants are converted, integer and bool parts stay. check_gradient uses it
// to compare float32 models against float64 finite differences.
template <class U, expression E>
auto retype(const E& e) {
  using T = typename E::value_type;
  using V = detail::float_as<U, T>;
  if constexpr (E::kind == node_kind::placeholder) {
    placeholder<E::name, V, typename E::shape_type> out;
    out.info = e.info;
    return out;
  } else if constexpr (E::kind == node_kind::variable) {
    variable<E::name, V, typename E::shape_type> out;
    out.info = e.info;
    return out;
  } else if constexpr (E::kind == node_kind::constant) {
    tensor<V, typename E::shape_type> converted(e.value->extents(), uninitialized);
    for (std::size_t i = 0; i < converted.size(); ++i) converted[i] = V((*e.value)[i]);
    return constant_node<V, typename E::shape_type>{{}, std::make_shared<const decltype(converted)>(std::move(converted)), e.info};
  } else if constexpr (E::kind == node_kind::literal) {
    if constexpr (is_static_literal_v<E>) return static_literal<V, (long long)E::value>{};
    else return scalar_literal<V>{{}, V(e.value), e.info};
  } else {
    return std::apply([&](const auto&... a) { return detail::rebuild_retyped<U>(e, retype<U>(a)...); }, e.args());
  }
}

}  // namespace symflow
