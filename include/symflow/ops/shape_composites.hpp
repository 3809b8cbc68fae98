#pragma once
// split and tile, composed of views and concat: their gradients come from those ops' rules.
#include <cstddef>
#include <tuple>
#include <utility>

#include "concat.hpp"
#include "slice.hpp"

namespace symflow {

namespace split_detail {
// Where part K starts: the sum of the extents before it.
template <std::size_t K, std::size_t... Sizes>
constexpr std::size_t part_begin() {
  const std::size_t sizes[] = {Sizes...};
  std::size_t begin = 0;
  for (std::size_t k = 0; k < K; ++k) begin += sizes[k];
  return begin;
}
template <std::size_t K, std::size_t... Sizes>
constexpr std::size_t part_size() {
  const std::size_t sizes[] = {Sizes...};
  return sizes[K];
}
template <std::size_t Axis, std::size_t... Sizes, expression X, std::size_t... K>
auto parts(const X& x, std::index_sequence<K...>) {
  return std::tuple{narrow<int(Axis)>(x, part_begin<K, Sizes...>(), part_begin<K, Sizes...>() + part_size<K, Sizes...>())...};
}
}  // namespace split_detail

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
  return split_detail::parts<axis, Sizes...>(x, std::make_index_sequence<sizeof...(Sizes)>{});
}

// Plain recursion over the counts, no constexpr arrays of a pack: nvcc's front end rejects those
// inside a template (it reports the pack as unexpanded).
namespace tile_detail {
template <std::size_t Axis, expression X, std::size_t... I>
auto copies_along(const X& x, std::index_sequence<I...>) {
  return concat<int(Axis)>(((void)I, x)...);
}
template <std::size_t Axis, expression X>
auto tile_from(const X& x) {
  return x;
}
template <std::size_t Axis, std::size_t First, std::size_t... Rest, expression X>
auto tile_from(const X& x) {
  if constexpr (First == 1) return tile_from<Axis + 1, Rest...>(x);
  else return tile_from<Axis + 1, Rest...>(copies_along<Axis>(x, std::make_index_sequence<First>{}));
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
