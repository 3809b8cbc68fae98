#pragma once
#include <algorithm>
#include <array>
#include <cstddef>

#include "../../core/shape.hpp"

namespace symflow::cpu {

// Fused loops iterate over a "frame": the extents of the group's result. Every leaf and the output
// carry strides expressed in frame coordinates (0 along broadcast axes), so one loop nest serves
// every broadcast pattern.
inline constexpr std::size_t max_rank = 8;
using frame_strides = std::array<std::size_t, max_rank>;

struct frame {
  std::size_t rank = 1;
  std::array<std::size_t, max_rank> extents{};

  template <std::size_t R>
  static frame of(const extents_t<R>& e) {
    static_assert(R <= max_rank, "symflow: tensors have at most 8 axes");
    frame f;
    if constexpr (R == 0) {
      f.rank = 1;
      f.extents[0] = 1;
    } else {
      f.rank = R;
      std::copy(e.begin(), e.end(), f.extents.begin());
    }
    return f;
  }
  std::size_t inner() const { return extents[rank - 1]; }
  std::size_t rows() const {
    std::size_t n = 1;
    for (std::size_t i = 0; i + 1 < rank; ++i) n *= extents[i];
    return n;
  }
  std::size_t size() const { return rows() * inner(); }
};

// Strides of a value with the given extents and strides, right-aligned into the frame; axes where
// the value has extent 1 get stride 0 (broadcast).
inline frame_strides align_to_frame(const frame& f, std::size_t rank, const std::size_t* extents,
                                    const std::size_t* strides) {
  frame_strides out{};
  const std::size_t lead = f.rank >= rank ? f.rank - rank : 0;
  for (std::size_t i = lead; i < f.rank; ++i) {
    const std::size_t j = i - lead;
    out[i] = extents[j] == 1 ? 0 : strides[j];
  }
  return out;
}

// Merges adjacent frame axes wherever every stride array allows it (and drops extent-1 axes), so a
// contiguous elementwise chain becomes one flat loop. `arrays` are all stride arrays of the group.
inline void collapse(frame& f, frame_strides** arrays, std::size_t count) {
  std::size_t n = 0;  // new rank, built from the innermost axis outwards
  std::array<std::size_t, max_rank> ext{};
  std::array<std::size_t, max_rank> axis_of{};  // new axis -> old axis supplying its stride
  for (std::size_t i = f.rank; i-- > 0;) {
    if (f.extents[i] == 1 && !(i == 0 && n == 0)) continue;
    if (n > 0) {
      bool merge = true;
      const std::size_t inner_axis = axis_of[n - 1];
      for (std::size_t k = 0; k < count && merge; ++k)
        merge = (*arrays[k])[i] == (*arrays[k])[inner_axis] * ext[n - 1];
      if (merge) {
        ext[n - 1] *= f.extents[i];
        continue;
      }
    }
    ext[n] = f.extents[i];
    axis_of[n] = i;
    ++n;
  }
  if (n == 0) {
    ext[0] = 1;
    axis_of[0] = f.rank - 1;
    n = 1;
  }
  for (std::size_t k = 0; k < count; ++k) {
    frame_strides old = *arrays[k];
    for (std::size_t a = 0; a < n; ++a) (*arrays[k])[n - 1 - a] = old[axis_of[a]];
  }
  f.rank = n;
  for (std::size_t a = 0; a < n; ++a) f.extents[n - 1 - a] = ext[a];
}

// Odometer over the outer (all but innermost) frame axes.
struct row_cursor {
  std::array<std::size_t, max_rank> index{};
  void seek(const frame& f, std::size_t row) {
    for (std::size_t a = f.rank - 1; a-- > 0;) {
      index[a] = row % f.extents[a];
      row /= f.extents[a];
    }
  }
  void next(const frame& f) {
    for (std::size_t a = f.rank - 1; a-- > 0;) {
      if (++index[a] < f.extents[a]) return;
      index[a] = 0;
    }
  }
  std::size_t offset(const frame& f, const frame_strides& s) const {
    std::size_t off = 0;
    for (std::size_t a = 0; a + 1 < f.rank; ++a) off += index[a] * s[a];
    return off;
  }
};

}  // namespace symflow::cpu
