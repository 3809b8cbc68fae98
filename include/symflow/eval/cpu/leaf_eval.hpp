#pragma once
#include <type_traits>

#include "../../core/tensor.hpp"
#include "../../ops/packet_math.hpp"
#include "frame.hpp"

namespace symflow::cpu {

// Reads a value that already sits in memory (a feed, a variable, a constant or a materialised
// intermediate) with arbitrary strides. The innermost frame stride selects a contiguous load, a
// broadcast or a gather.
template <class T>
struct leaf_eval {
  using value_type = T;
  static constexpr bool vectorizable = std::is_floating_point_v<T>;

  const T* data = nullptr;
  std::size_t rank = 0;
  std::array<std::size_t, max_rank> extents{};
  std::array<std::size_t, max_rank> strides{};
  frame_strides in_frame{};
  const T* row = nullptr;
  std::size_t inner_stride = 0;

  template <std::size_t R>
  static leaf_eval of(const T* data, const extents_t<R>& e, const extents_t<R>& s) {
    leaf_eval l;
    l.data = data;
    l.rank = R;
    std::copy(e.begin(), e.end(), l.extents.begin());
    std::copy(s.begin(), s.end(), l.strides.begin());
    return l;
  }
  bool is_contiguous() const {
    std::size_t expect = 1;
    for (std::size_t i = rank; i-- > 0;) {
      if (extents[i] != 1 && strides[i] != expect) return false;
      expect *= extents[i];
    }
    return true;
  }
  template <std::size_t R>
  tensor_view<const T, dyn_shape<R>> view() const {
    extents_t<R> e{}, s{};
    std::copy_n(extents.begin(), R, e.begin());
    std::copy_n(strides.begin(), R, s.begin());
    return {data, e, s};
  }

  void bind_frame(const frame& f) { in_frame = align_to_frame(f, rank, extents.data(), strides.data()); }
  template <class F>
  void visit_strides(F&& f) {
    f(in_frame);
  }
  SYMFLOW_INLINE void set_row(const frame& f, const row_cursor& c) {
    row = data + c.offset(f, in_frame);
    inner_stride = in_frame[f.rank - 1];
  }
  SYMFLOW_INLINE T scalar(std::size_t j) const { return row[j * inner_stride]; }
  // Dense: the caller has checked that every leaf of its pass has inner stride 1 (a pass over
  // same-shaped arrays, an optimiser update), which takes the stride tests out of every packet.
  template <class P, bool Dense = false>
  SYMFLOW_INLINE P packet(std::size_t j) const {
    namespace pm = simd::pm;
    if constexpr (Dense) return pm::ploadu<P>(row + j);
    if (inner_stride == 1) return pm::ploadu<P>(row + j);
    if (inner_stride == 0) return pm::pset1<P>(*row);
    return gather<P>(row + j * inner_stride, inner_stride);
  }

 private:
  // Strided reads are the rare case (a transposed operand); kept out of line so that every fused
  // loop does not carry an inlined 16-load gather per leaf (it dominated compile time and code size).
  template <class P>
  [[gnu::noinline, gnu::cold]] static P gather(const T* from, std::size_t stride) {
    return simd::pm::pgather<T, P>(from, Eigen::Index(stride));
  }
};

// A scalar literal, broadcast everywhere.
template <class T>
struct scalar_eval {
  using value_type = T;
  static constexpr bool vectorizable = std::is_floating_point_v<T>;
  T value;
  void bind_frame(const frame&) {}
  template <class F>
  void visit_strides(F&&) {}
  SYMFLOW_INLINE void set_row(const frame&, const row_cursor&) {}
  SYMFLOW_INLINE T scalar(std::size_t) const { return value; }
  template <class P, bool Dense = false>
  SYMFLOW_INLINE P packet(std::size_t) const {
    return simd::pm::pset1<P>(value);
  }
};

}  // namespace symflow::cpu
