#pragma once
// Copying a strided layout (a view the interpreter cannot alias: a transpose, a permutation, a
// strided slice) into contiguous storage.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../expr/runtime_forms.hpp"

namespace symflow::runtime_detail {

// dst[i][j] = src[i * row_stride + j * col_stride] for a rows x cols block, in square tiles: a
// transpose read element by element down a column touches a new cache line per element, a tile
// reuses each line it brings in (one 784x256 float transpose: 0.7 ms element by element, a tenth
// of that tiled).
template <class E>
void copy_tiled(const E* src, std::size_t rows, std::size_t cols, std::size_t row_stride, std::size_t col_stride,
                E* dst) {
  constexpr std::size_t tile = 32;
  for (std::size_t i0 = 0; i0 < rows; i0 += tile) {
    const std::size_t i1 = std::min(rows, i0 + tile);
    for (std::size_t j0 = 0; j0 < cols; j0 += tile) {
      const std::size_t j1 = std::min(cols, j0 + tile);
      for (std::size_t i = i0; i < i1; ++i)
        for (std::size_t j = j0; j < j1; ++j) dst[i * cols + j] = src[i * row_stride + j * col_stride];
    }
  }
}

// Calls f(k, at) for the k-th index (row-major) of the layout's first `outer` axes, `at` being the
// element offset of that index.
template <class F>
void for_each_outer_index(const runtime_layout& l, std::size_t outer, F&& f) {
  std::size_t count = 1;
  for (std::size_t i = 0; i < outer; ++i) count *= l.extents[i];
  std::vector<std::size_t> index(outer, 0);
  for (std::size_t k = 0; k < count; ++k) {
    std::size_t at = l.offset;
    for (std::size_t i = 0; i < outer; ++i) at += index[i] * l.strides[i];
    f(k, at);
    for (std::size_t i = outer; i-- > 0;) {
      if (++index[i] < l.extents[i]) break;
      index[i] = 0;
    }
  }
}

template <class E>
void copy_strided_as(const E* src, const runtime_layout& l, E* dst) {
  const std::size_t rank = l.extents.size();
  if (element_count(l.extents) == 0) return;
  if (rank == 0) {
    dst[0] = src[l.offset];
    return;
  }
  const std::size_t inner = l.extents[rank - 1], inner_stride = l.strides[rank - 1];
  if (inner_stride != 1 && rank >= 2) {  // tiles over the last two axes, for each index of the others
    const std::size_t rows = l.extents[rank - 2], row_stride = l.strides[rank - 2];
    for_each_outer_index(l, rank - 2, [&](std::size_t k, std::size_t at) {
      copy_tiled(src + at, rows, inner, row_stride, inner_stride, dst + k * rows * inner);
    });
    return;
  }
  for_each_outer_index(l, rank - 1, [&](std::size_t k, std::size_t at) {
    E* row = dst + k * inner;
    if (inner_stride == 1) std::memcpy(row, src + at, inner * sizeof(E));
    else
      for (std::size_t j = 0; j < inner; ++j) row[j] = src[at + j * inner_stride];
  });
}

// Copies the elements a layout describes into contiguous storage (elements of esize bytes: 1, 4 or
// 8, the sizes the dtypes have).
inline void copy_strided(const char* src, const runtime_layout& l, char* dst, std::size_t esize) {
  switch (esize) {
    case 1: return copy_strided_as(reinterpret_cast<const unsigned char*>(src), l, reinterpret_cast<unsigned char*>(dst));
    case 4: return copy_strided_as(reinterpret_cast<const std::uint32_t*>(src), l, reinterpret_cast<std::uint32_t*>(dst));
    case 8: return copy_strided_as(reinterpret_cast<const std::uint64_t*>(src), l, reinterpret_cast<std::uint64_t*>(dst));
    default: throw value_error("copy_strided: no dtype has elements of " + std::to_string(esize) + " bytes");
  }
}

inline bool is_contiguous(const runtime_layout& l) {
  return l.strides == runtime_layout::contiguous(l.extents).strides || element_count(l.extents) <= 1;
}

}  // namespace symflow::runtime_detail
