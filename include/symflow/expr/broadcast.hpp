#pragma once
#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "../core/error.hpp"
#include "../core/shape.hpp"

namespace symflow {

// NumPy broadcasting, right-aligned: equal extents stay, an extent of 1 stretches. A dyn extent
// against a static one takes the static one (checked again at run time).
namespace detail {
constexpr std::size_t broadcast_extent(std::size_t a, std::size_t b, bool& ok) {
  if (a == b) return a;
  if (a == 1) return b;
  if (b == 1) return a;
  if (a == dyn) return b;
  if (b == dyn) return a;
  ok = false;
  return a;
}

template <shape_spec A, shape_spec B>
consteval auto static_broadcast() {
  constexpr std::size_t rank = std::max(A::rank, B::rank);
  std::array<std::size_t, rank> out{};
  bool ok = true;
  for (std::size_t i = 0; i < rank; ++i) {
    std::size_t a = i + A::rank >= rank ? A::extents[i + A::rank - rank] : 1;
    std::size_t b = i + B::rank >= rank ? B::extents[i + B::rank - rank] : 1;
    out[i] = broadcast_extent(a, b, ok);
  }
  return std::pair{ok, out};
}
}  // namespace detail

template <shape_spec A, shape_spec B>
inline constexpr bool shapes_broadcast_v = detail::static_broadcast<A, B>().first;

template <shape_spec A, shape_spec B>
using broadcast_shape_t = shape_from_array_t<detail::static_broadcast<A, B>().second>;

template <shape_spec... S>
struct broadcast_all;
template <shape_spec S>
struct broadcast_all<S> {
  static constexpr bool ok = true;
  using type = S;
};
template <shape_spec S, shape_spec... Rest>
struct broadcast_all<S, Rest...> {
  using rest = broadcast_all<Rest...>;
  static constexpr bool ok = rest::ok && shapes_broadcast_v<S, typename rest::type>;
  using type = broadcast_shape_t<S, typename rest::type>;
};

// The condition of the static_assert that rejects incompatible operands. Its template arguments are
// what the compiler prints after the message: the op and the shapes of its operands.
template <class Op, shape_spec... OperandShapes>
struct operand_shapes_broadcast_for_op {
  // Its own member, not one inherited from std::bool_constant: g++ names the class that declares
  // `value` when the static_assert fails, and this one carries the op and the shapes.
  static constexpr bool value = broadcast_all<OperandShapes...>::ok;
};

// Runtime counterpart: merges one operand's extents (right-aligned) into `out`, which starts as all
// ones. Returns false when they conflict; the caller names the op and the shapes.
template <std::size_t Out, std::size_t In>
bool broadcast_into(extents_t<Out>& out, const extents_t<In>& in) {
  static_assert(In <= Out);
  for (std::size_t i = 0; i < In; ++i) {
    std::size_t& o = out[Out - In + i];
    const std::size_t e = in[i];
    if (o == e || e == 1) continue;
    if (o != 1) return false;
    o = e;
  }
  return true;
}

}  // namespace symflow
