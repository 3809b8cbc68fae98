#pragma once
// split and tile, composed of views and concat: their gradients come from those ops' rules.
#include <array>
#include <cstddef>
#include <tuple>
#include <utility>

#include "concat.hpp"
#include "slice.hpp"

namespace symflow {

// split<Axis, Sizes...>(x): consecutive parts of x along Axis (negative: from the last) with the
// given extents, as a std::tuple of views (ONNX Split, torch.split with a list of sizes). The sizes
// must add up to the axis's extent, checked when the parts are evaluated.
template <int Axis, std::size_t... Sizes, expression X>
auto split(const X& x) {
  static_assert(sizeof...(Sizes) > 0, "symflow: split: give the parts' extents, split<Axis, 3, 5>(x)");
  constexpr int rank = int(shape_of<X>::rank);
  static_assert(Axis >= -rank && Axis < rank, "symflow: split: the axis is outside the operand's rank");
  constexpr std::size_t axis = std::size_t(Axis < 0 ? Axis + rank : Axis);
  constexpr std::size_t extent = shape_of<X>::extents[axis], total = (Sizes + ...);
  static_assert(extent == dyn || extent == total, "symflow: split: the parts' extents do not add up to the axis's");
  constexpr std::array<std::size_t, sizeof...(Sizes)> sizes{Sizes...};
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    constexpr auto begin = [](std::size_t k, const auto& s) {
      std::size_t b = 0;
      for (std::size_t j = 0; j < k; ++j) b += s[j];
      return b;
    };
    return std::tuple{narrow<int(axis)>(x, begin(I, sizes), begin(I, sizes) + sizes[I])...};
  }(std::index_sequence_for<decltype(Sizes)...>{});
}

namespace tile_detail {
template <std::size_t Axis, std::size_t Copies, expression X>
auto repeat_along(const X& x) {
  if constexpr (Copies == 1) return x;
  else
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return concat<int(Axis)>(((void)I, x)...);
    }(std::make_index_sequence<Copies>{});
}
template <std::size_t Axis, std::size_t... Reps, expression X>
auto tile_from(const X& x) {
  if constexpr (Axis == sizeof...(Reps)) {
    return x;
  } else {
    constexpr std::array<std::size_t, sizeof...(Reps)> reps{Reps...};
    return tile_from<Axis + 1, Reps...>(repeat_along<Axis, reps[Axis]>(x));
  }
}
}  // namespace tile_detail

// tile<Reps...>(x): x repeated Reps[a] times along each axis a (ONNX Tile, numpy.tile with one
// repetition count per axis); each count at least 1.
template <std::size_t... Reps, expression X>
auto tile(const X& x) {
  static_assert(sizeof...(Reps) == shape_of<X>::rank, "symflow: tile: give one repetition count per axis");
  static_assert(((Reps >= 1) && ...), "symflow: tile: repetition counts are at least 1");
  return tile_detail::tile_from<0, Reps...>(x);
}

}  // namespace symflow
