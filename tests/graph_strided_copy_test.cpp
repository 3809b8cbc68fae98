// The interpreter's copy of a strided view into contiguous storage (runtime/strided_copy.hpp)
// against an element-by-element walk of the layout, for transposes, permutations, strided and
// offset slices of odd extents, and every element size the dtypes have.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <symflow/runtime/strided_copy.hpp>

using symflow::runtime_layout;

namespace {

// dst[k] = src[offset + sum_i index_i(k) * strides_i], k in row-major order of the extents.
template <class E>
std::vector<E> reference_copy(const std::vector<E>& src, const runtime_layout& l) {
  std::size_t total = 1;
  for (auto e : l.extents) total *= e;
  std::vector<E> out(total);
  for (std::size_t k = 0; k < total; ++k) {
    std::size_t rest = k, at = l.offset;
    for (std::size_t i = l.extents.size(); i-- > 0;) {
      at += (rest % l.extents[i]) * l.strides[i];
      rest /= l.extents[i];
    }
    out[k] = src.at(at);
  }
  return out;
}

// A random layout over a contiguous source of random extents: a permutation of its axes, then a
// slice (start, step) along each.
runtime_layout random_view(std::mt19937& rng, std::size_t rank, std::size_t& source_size) {
  std::vector<std::size_t> source(rank);
  for (auto& e : source) e = 1 + rng() % 37;
  std::vector<std::size_t> strides(rank);
  std::size_t s = 1;
  for (std::size_t i = rank; i-- > 0;) strides[i] = s, s *= source[i];
  source_size = s;
  std::vector<std::size_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  runtime_layout l;
  l.offset = 0;
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t axis = perm[i], start = rng() % source[axis], step = 1 + rng() % 3;
    l.offset += start * strides[axis];
    l.extents.push_back((source[axis] - start + step - 1) / step);
    l.strides.push_back(strides[axis] * step);
  }
  return l;
}

template <class E>
void check_random_layouts(unsigned seed) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t rank = 1 + trial % 4;
    std::size_t size = 0;
    const runtime_layout l = random_view(rng, rank, size);
    std::vector<E> src(size);
    for (auto& v : src) v = E(rng());
    const std::vector<E> want = reference_copy(src, l);
    std::vector<E> got(want.size() + 1, E(0x5a));  // one guard element past the end
    symflow::runtime_detail::copy_strided(reinterpret_cast<const char*>(src.data()), l,
                                          reinterpret_cast<char*>(got.data()), sizeof(E));
    EXPECT_EQ(got.back(), E(0x5a)) << "wrote past the end, trial " << trial;
    got.pop_back();
    ASSERT_EQ(got, want) << "trial " << trial << ", rank " << rank;
  }
}

}  // namespace

TEST(StridedCopy, RandomPermutedSlicedLayoutsMatchTheElementWalk) {
  check_random_layouts<std::uint8_t>(1);
  check_random_layouts<std::uint32_t>(2);
  check_random_layouts<std::uint64_t>(3);
}

TEST(StridedCopy, MatrixTransposeLargerThanATile) {
  const std::size_t rows = 784, cols = 257;  // the transposed view is cols x rows
  std::vector<std::uint32_t> src(rows * cols);
  std::iota(src.begin(), src.end(), 0u);
  runtime_layout t;
  t.offset = 0;
  t.extents = {cols, rows};
  t.strides = {1, cols};
  std::vector<std::uint32_t> got(rows * cols);
  symflow::runtime_detail::copy_strided(reinterpret_cast<const char*>(src.data()), t, reinterpret_cast<char*>(got.data()), 4);
  for (std::size_t i = 0; i < cols; ++i)
    for (std::size_t j = 0; j < rows; ++j) ASSERT_EQ(got[i * rows + j], src[j * cols + i]) << i << "," << j;
}

TEST(StridedCopy, ScalarAndEmptyLayouts) {
  const std::vector<std::uint64_t> src{7, 8, 9};
  runtime_layout scalar;
  scalar.offset = 2;
  std::uint64_t out = 0;
  symflow::runtime_detail::copy_strided(reinterpret_cast<const char*>(src.data()), scalar, reinterpret_cast<char*>(&out), 8);
  EXPECT_EQ(out, 9u);
  runtime_layout empty;
  empty.offset = 0;
  empty.extents = {3, 0};
  empty.strides = {1, 3};
  symflow::runtime_detail::copy_strided(reinterpret_cast<const char*>(src.data()), empty, nullptr, 8);  // writes nothing
}
