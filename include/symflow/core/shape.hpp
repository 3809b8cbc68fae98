#pragma once
#include <array>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>

namespace symflow {

// An extent that is known only when the expression is evaluated (a batch size, a sequence length).
inline constexpr std::size_t dyn = std::numeric_limits<std::size_t>::max();

// The static shape of a tensor or expression: one extent per axis, `dyn` where unknown until run time.
template <std::size_t... Extents>
struct shape {
  static constexpr std::size_t rank = sizeof...(Extents);
  static constexpr std::array<std::size_t, rank> extents{Extents...};
  static constexpr bool is_static = ((Extents != dyn) && ...);
};

// Runtime extents of a value whose rank is known at compile time.
template <std::size_t Rank>
using extents_t = std::array<std::size_t, Rank>;

// The shape of a given rank with every extent dyn.
template <std::size_t Rank, class Seq = std::make_index_sequence<Rank>>
struct dyn_shape_of_rank;
template <std::size_t Rank, std::size_t... I>
struct dyn_shape_of_rank<Rank, std::index_sequence<I...>> {
  using type = shape<((void)I, dyn)...>;
};
template <std::size_t Rank>
using dyn_shape = typename dyn_shape_of_rank<Rank>::type;

template <class S>
inline constexpr bool is_shape_v = false;
template <std::size_t... E>
inline constexpr bool is_shape_v<shape<E...>> = true;

template <class S>
concept shape_spec = is_shape_v<S>;

namespace detail {
template <auto Array, class Seq = std::make_index_sequence<Array.size()>>
struct shape_from_array;
template <auto Array, std::size_t... I>
struct shape_from_array<Array, std::index_sequence<I...>> {
  using type = shape<Array[I]...>;
};
}  // namespace detail

// Turns a constexpr std::array of extents back into a shape type.
template <auto Array>
using shape_from_array_t = typename detail::shape_from_array<Array>::type;

template <std::size_t Rank>
constexpr std::size_t element_count(const extents_t<Rank>& e) {
  std::size_t n = 1;
  for (std::size_t x : e) n *= x;
  return n;
}

// Row-major (C order) strides, in elements.
template <std::size_t Rank>
constexpr extents_t<Rank> row_major_strides(const extents_t<Rank>& e) {
  extents_t<Rank> s{};
  std::size_t acc = 1;
  for (std::size_t i = Rank; i-- > 0;) {
    s[i] = acc;
    acc *= e[i];
  }
  return s;
}

// "[?,784]" for static extents (dyn printed as ?), "[32,784]" for runtime ones.
template <class Range>
std::string format_extents(const Range& extents) {
  std::string out = "[";
  bool first = true;
  for (std::size_t x : extents) {
    if (!first) out += ",";
    first = false;
    out += x == dyn ? std::string("?") : std::to_string(x);
  }
  return out + "]";
}

template <shape_spec S>
std::string shape_string() {
  return format_extents(S::extents);
}

// Static extents are checked against runtime ones when a value is fed or stored.
template <shape_spec S>
constexpr bool extents_match(const extents_t<S::rank>& runtime) {
  for (std::size_t i = 0; i < S::rank; ++i)
    if (S::extents[i] != dyn && S::extents[i] != runtime[i]) return false;
  return true;
}

// Static extents of S with dyn entries filled in from defaults (for shapes that are fully static).
template <shape_spec S>
constexpr extents_t<S::rank> static_extents() {
  return S::extents;
}

}  // namespace symflow
