#pragma once
// plain_tuple<T...>: a tuple as a plain aggregate, for values whose types are expression types or
// contain them (evaluators, references to outputs).
//
// Why not std::tuple: g++ 12 resolves std::tuple's constrained constructors (and CTAD, std::tie,
// std::make_tuple) in time exponential in the depth of a model type whose subexpressions are
// shared, because their constraints compare the element types along every path of the type. The
// forward pass of the 5-layer LN+GELU MLP spent 50 of its 54 s (-fsyntax-only) there. An aggregate
// is initialised member by member with no overload resolution on its elements' types.
#include <cstddef>
#include <type_traits>
#include <utility>

namespace symflow {

namespace detail {
template <std::size_t I, class T>
struct plain_slot {
  T value;
};
template <class Indices, class... T>
struct plain_tuple_base;
template <std::size_t... I, class... T>
struct plain_tuple_base<std::index_sequence<I...>, T...> : plain_slot<I, T>... {};

template <std::size_t I, class T>
constexpr T& slot_value(plain_slot<I, T>& s) noexcept {
  return s.value;
}
template <std::size_t I, class T>
constexpr const T& slot_value(const plain_slot<I, T>& s) noexcept {
  return s.value;
}
template <std::size_t I, class T>
constexpr T slot_type(const plain_slot<I, T>&);  // declared only: names the type of element I
}  // namespace detail

// Built with braces around each element: plain_tuple<A, B>{{{a}, {b}}}, or by make_plain_tuple /
// tie_plain, which do that.
template <class... T>
struct plain_tuple : detail::plain_tuple_base<std::index_sequence_for<T...>, T...> {
  static constexpr std::size_t size = sizeof...(T);
};

template <std::size_t I, class... T>
constexpr auto& get(plain_tuple<T...>& t) noexcept {
  return detail::slot_value<I>(t);
}
template <std::size_t I, class... T>
constexpr const auto& get(const plain_tuple<T...>& t) noexcept {
  return detail::slot_value<I>(t);
}

// The type of element I.
template <std::size_t I, class Tuple>
using plain_element_t = decltype(detail::slot_type<I>(std::declval<const Tuple&>()));

// Values (moved or copied in) and references.
template <class... T>
constexpr plain_tuple<std::remove_cvref_t<T>...> make_plain_tuple(T&&... v) {
  return {{{std::forward<T>(v)}...}};
}
template <class... T>
constexpr plain_tuple<const T&...> tie_plain(const T&... v) noexcept {
  return {{{v}...}};
}

// f(elements...), as std::apply.
template <class F, class... T>
constexpr decltype(auto) apply_plain(F&& f, plain_tuple<T...>& t) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
    return std::forward<F>(f)(detail::slot_value<I>(t)...);
  }(std::index_sequence_for<T...>{});
}
template <class F, class... T>
constexpr decltype(auto) apply_plain(F&& f, const plain_tuple<T...>& t) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
    return std::forward<F>(f)(detail::slot_value<I>(t)...);
  }(std::index_sequence_for<T...>{});
}

}  // namespace symflow
