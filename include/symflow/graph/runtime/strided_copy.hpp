#pragma once
// Copying a strided layout (a view the interpreter cannot alias: a transpose, a permutation, a
// strided slice) into contiguous storage.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../../expr/runtime_forms.hpp"

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

template <class E>
void copy_strided_as(const E* src, const runtime_layout& l, E* dst) {
  const std::size_t rank = l.extents.size(), total = element_count(l.extents);
  if (!total) return;
  if (rank == 0) {
    dst[0] = src[l.offset];
    return;
  }
  const std::size_t inner = l.extents[rank - 1], inner_stride = l.strides[rank - 1];
  if (inner_stride != 1 && rank >= 2) {  // tiles over the last two axes, for each index of the others
    const std::size_t rows = l.extents[rank - 2], row_stride = l.strides[rank - 2], block = rows * inner;
    std::vector<std::size_t> index(rank - 2, 0);
    for (std::size_t done = 0; done < total; done += block) {
      std::size_t at = l.offset;
      for (std::size_t i = 0; i + 2 < rank; ++i) at += index[i] * l.strides[i];
      copy_tiled(src + at, rows, inner, row_stride, inner_stride, dst + done);
      for (std::size_t i = rank - 2; i-- > 0;) {
        if (++index[i] < l.extents[i]) break;
        index[i] = 0;
      }
    }
    return;
  }
  std::vector<std::size_t> index(rank, 0);
  for (std::size_t done = 0; done < total; done += inner) {
    std::size_t at = l.offset;
    for (std::size_t i = 0; i + 1 < rank; ++i) at += index[i] * l.strides[i];
    if (inner_stride == 1) std::memcpy(dst + done, src + at, inner * sizeof(E));
    else
      for (std::size_t j = 0; j < inner; ++j) dst[done + j] = src[at + j * inner_stride];
    for (std::size_t i = rank - 1; i-- > 0;) {
      if (++index[i] < l.extents[i]) break;
      index[i] = 0;
    }
  }
}

// Copies the elements a layout describes into contiguous storage (elements of esize bytes).
inline void copy_strided(const char* src, const runtime_layout& l, char* dst, std::size_t esize) {
  switch (esize) {
    case 1: return copy_strided_as(reinterpret_cast<const unsigned char*>(src), l, reinterpret_cast<unsigned char*>(dst));
    case 4: return copy_strided_as(reinterpret_cast<const std::uint32_t*>(src), l, reinterpret_cast<std::uint32_t*>(dst));
    case 8: return copy_strided_as(reinterpret_cast<const std::uint64_t*>(src), l, reinterpret_cast<std::uint64_t*>(dst));
    default: break;
  }
  // Any other element size: byte copies of each element, through the same index walk.
  const std::size_t rank = l.extents.size(), total = element_count(l.extents);
  if (!total) return;
  std::vector<std::size_t> index(rank, 0);
  for (std::size_t k = 0; k < total; ++k) {
    std::size_t at = l.offset;
    for (std::size_t i = 0; i < rank; ++i) at += index[i] * l.strides[i];
    std::memcpy(dst + k * esize, src + at * esize, esize);
    for (std::size_t i = rank; i-- > 0;) {
      if (++index[i] < l.extents[i]) break;
      index[i] = 0;
    }
  }
}

inline bool is_contiguous(const runtime_layout& l) {
  return l.strides == runtime_layout::contiguous(l.extents).strides || element_count(l.extents) <= 1;
}

}  // namespace symflow::runtime_detail
