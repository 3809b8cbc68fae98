// Integer sums and means wrap (two's complement), as add does, in compiled evaluation and in the
// graph interpreter. Their combine step was a plain signed `a + b`, undefined behaviour when a
// partial sum overflows; the sanitizer job builds this program with UBSan (-fno-sanitize-recover),
// which reports any such addition. The reference adds in uint64 (modulo 2^64) and keeps the dtype's
// low bits; an integer mean is that wrapped sum divided by the count, truncated toward zero.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

// Values near both ends of T's range (and a few small ones): every run of a few elements overflows,
// one way or the other.
template <class T>
tensor<T, shape<3, dyn>> extreme_values(std::size_t n, unsigned seed) {
  using L = std::numeric_limits<T>;
  const T pool[] = {L::max(), T(L::max() - 1), L::min(), T(L::min() + 1), T(L::max() / 3), T(-1), T(1), T(0), T(L::min() / 2)};
  std::mt19937 rng(seed);
  tensor<T, shape<3, dyn>> t(extents_t<2>{3, n}, T(0));
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = pool[rng() % std::size(pool)];
  return t;
}

// The wrapped sum of the values `at(k)` for k in [0, count): uint64 arithmetic, cut to T.
template <class T, class F>
T wrapped_sum(std::size_t count, F at) {
  std::uint64_t s = 0;
  for (std::size_t k = 0; k < count; ++k) s += static_cast<std::uint64_t>(static_cast<std::int64_t>(at(k)));
  return static_cast<T>(s);  // modulo 2^bits (C++20)
}
template <class T>
T wrapped_mean(T sum, std::size_t count) {
  return static_cast<T>(static_cast<std::int64_t>(sum) / static_cast<std::int64_t>(count));
}

template <class T>
void check_wrapping(std::size_t n, unsigned seed) {
  SCOPED_TRACE(std::string(dtype_name(dtype_v<T>)) + " [3, " + std::to_string(n) + "]");
  const auto k = placeholder<"k", T, shape<3, dyn>>();
  const auto v = extreme_values<T>(n, seed);
  const auto at = [&](std::size_t r, std::size_t c) { return v.data()[r * n + c]; };

  // References: over everything, over the rows (axis 1) and over the columns (axis 0).
  const T all = wrapped_sum<T>(3 * n, [&](std::size_t q) { return v.data()[q]; });
  std::vector<T> rows(3), columns(n);
  for (std::size_t r = 0; r < 3; ++r) rows[r] = wrapped_sum<T>(n, [&](std::size_t c) { return at(r, c); });
  for (std::size_t c = 0; c < n; ++c) columns[c] = wrapped_sum<T>(3, [&](std::size_t r) { return at(r, c); });

  const auto exprs = std::tuple{sum(k), sum(k, axes<1>), sum(k, axes<0>, keepdims), mean(k), mean(k, axes<1>),
                                mean(k, axes<0>)};
  // Compiled: each expression on its own (fused loop), then all of them in one evaluation.
  const auto one_by_one = std::apply([&](const auto&... e) { return std::tuple{eval(e, k = v)...}; }, exprs);
  const auto together = std::apply([&](const auto&... e) { return eval(e..., k = v); }, exprs);
  // Interpreted, fused and unfused.
  const graph g = to_graph(exprs);
  runtime_feeds feeds;
  feeds.insert_or_assign("k", runtime_tensor(v));
  interpreter_options unfused;
  unfused.fuse = false;
  const std::vector<std::vector<runtime_tensor>> interpreted{interpreter(g).run(feeds), interpreter(g, unfused).run(feeds)};

  const auto expect = [&](std::size_t output, std::size_t index, T want, const auto& compiled_one, const auto& compiled_all) {
    EXPECT_EQ(compiled_one.data()[index], want) << "compiled, output " << output << ", element " << index;
    EXPECT_EQ(compiled_all.data()[index], want) << "compiled together, output " << output << ", element " << index;
    for (const auto& run : interpreted)
      EXPECT_EQ(run[output].template data<T>()[index], want) << "interpreted, output " << output << ", element " << index;
  };
  expect(0, 0, all, std::get<0>(one_by_one), std::get<0>(together));
  expect(3, 0, wrapped_mean(all, 3 * n), std::get<3>(one_by_one), std::get<3>(together));
  for (std::size_t r = 0; r < 3; ++r) {
    expect(1, r, rows[r], std::get<1>(one_by_one), std::get<1>(together));
    expect(4, r, wrapped_mean(rows[r], n), std::get<4>(one_by_one), std::get<4>(together));
  }
  for (std::size_t c = 0; c < n; ++c) {
    expect(2, c, columns[c], std::get<2>(one_by_one), std::get<2>(together));
    expect(5, c, wrapped_mean(columns[c], 3), std::get<5>(one_by_one), std::get<5>(together));
  }
}

// Odd lengths around a SIMD packet, and one whose compiled full reductions are split across threads
// (frames of 2^15 elements or more), so per-thread partial sums overflow and are combined too.
TEST(ReductionWrap, IntegerSumsAndMeansWrapLikeAdd) {
  for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(37), std::size_t(20011)}) {
    check_wrapping<std::int32_t>(n, 17u + unsigned(n));
    check_wrapping<std::int64_t>(n, 29u + unsigned(n));
  }
}

// The documented examples, and the edge the reference spells out: INT_MAX + 1 is INT_MIN.
TEST(ReductionWrap, SmallCases) {
  const auto x = placeholder<"x", std::int32_t, shape<dyn>>();
  tensor<std::int32_t, shape<dyn>> t(extents_t<1>{2}, std::numeric_limits<std::int32_t>::max());
  t[1] = 1;
  EXPECT_EQ(eval(sum(x), x = t)[0], std::numeric_limits<std::int32_t>::min());
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(t));
  EXPECT_EQ(interpreter(to_graph(sum(x))).run(feeds)[0].data<std::int32_t>()[0], std::numeric_limits<std::int32_t>::min());
  // mean of [-1, -2, -4] truncates toward zero: -2 (ops/mean.hpp's example).
  tensor<std::int32_t, shape<dyn>> m(extents_t<1>{3}, -1);
  m[1] = -2;
  m[2] = -4;
  EXPECT_EQ(eval(mean(x), x = m)[0], -2);
}

}  // namespace
