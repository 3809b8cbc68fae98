#pragma once
// Vocabulary for the simplification rules that ops carry in their own files.
#include <type_traits>

#include "leaves.hpp"
#include "node.hpp"

namespace symflow {

// What an op's simplify() returns when none of its rules applies.
struct no_rewrite {};

template <class E>
inline constexpr bool is_zero_v = false;
template <class T>
inline constexpr bool is_zero_v<static_literal<T, 0>> = true;
template <class E>
inline constexpr bool is_one_v = false;
template <class T>
inline constexpr bool is_one_v<static_literal<T, 1>> = true;

// True when every value in the expression is fixed by its type (no runtime literal, constant or
// op attribute), so two such expressions of the same type are the same value: x + x -> 2x is then
// decidable at compile time.
namespace detail {
// A class template, so that the answer is computed once per node type (see symbolic/traits.hpp).
template <class E, class Operands = operands_of<E>>
struct type_determined;
template <class E, class... A>
struct type_determined<E, std::tuple<A...>> {
  static constexpr bool value = [] {
    if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) return true;
    else if constexpr (E::kind == node_kind::constant) return false;
    else if constexpr (E::kind == node_kind::literal) return is_static_literal_v<E>;
    else if constexpr (E::kind == node_kind::accumulation) return false;  // its terms are counted at run time
    else if constexpr (E::kind == node_kind::reference) return false;     // its target is chosen at run time
    else return std::is_empty_v<typename E::op_type> && (type_determined<A>::value && ...);
  }();
};
}  // namespace detail
template <class E>
constexpr bool is_type_determined() {
  return detail::type_determined<E>::value;
}

template <class A, class B>
inline constexpr bool same_value_v = std::is_same_v<A, B> && is_type_determined<A>();

// Results known to be >= 0, for rules such as exp(log x) -> x that hold only on that domain.
template <class E>
inline constexpr bool known_nonnegative_v = false;

}  // namespace symflow
