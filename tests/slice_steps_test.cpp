// Slices with a step (ops/slice.hpp), their adjoint scatter with a step (ops/scatter.hpp) and flip
// (ops/flip.hpp) against index loops written here with Python's range semantics: every axis of a 3-D
// operand with odd extents, steps from 1 to past the extent, empty slices, negative steps as flip +
// slice, NaN/Inf/-0 kept bit for bit, non-float dtypes, gradients against central differences in
// float64, the graph interpreter and run-time differentiation against compiled evaluation, and a
// graph written before steps existed (no "step" attribute).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <symflow/debug/check_gradient.hpp>
#include <symflow/graph/all.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

#include "runtime_gradient_check.hpp"

using namespace symflow;

namespace {

constexpr std::size_t A = 3, B = 11, C = 6;
using cube = tensor<float, shape<dyn, dyn, dyn>>;

cube special_cube(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-4, 4);
  cube t({A, B, C}, 0.f);
  for (auto& v : t) v = d(rng);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), -0.f, std::numeric_limits<float>::denorm_min()};
  for (std::size_t k = 0; k < std::size(specials); ++k) t.data()[(k * 37) % t.size()] = specials[k];
  return t;
}

// Python's range(begin, end, step) (step may be negative).
std::vector<std::size_t> python_range(std::int64_t begin, std::int64_t end, std::int64_t step) {
  std::vector<std::size_t> out;
  if (step > 0)
    for (std::int64_t i = begin; i < end; i += step) out.push_back(std::size_t(i));
  else
    for (std::int64_t i = begin; i > end; i += step) out.push_back(std::size_t(i));
  return out;
}

// x[..., picks, ...] along `axis`: the reference every symflow result is compared with, bit for bit.
std::vector<float> pick(const cube& x, std::size_t axis, const std::vector<std::size_t>& picks, std::array<std::size_t, 3>& e) {
  e = {A, B, C};
  e[axis] = picks.size();
  std::vector<float> out;
  for (std::size_t i = 0; i < e[0]; ++i)
    for (std::size_t j = 0; j < e[1]; ++j)
      for (std::size_t k = 0; k < e[2]; ++k) {
        std::size_t at[3] = {i, j, k};
        at[axis] = picks[at[axis]];
        out.push_back(x.data()[(at[0] * B + at[1]) * C + at[2]]);
      }
  return out;
}

template <class Result>
void expect_bits(const Result& got, const std::vector<float>& want, const std::array<std::size_t, 3>& e) {
  ASSERT_EQ(got.extent(0), e[0]);
  ASSERT_EQ(got.extent(1), e[1]);
  ASSERT_EQ(got.extent(2), e[2]);
  for (std::size_t q = 0; q < want.size(); ++q)
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got.data()[q]), std::bit_cast<std::uint32_t>(want[q])) << "element " << q;
}

// The slice along Axis with a positive step, typed and interpreted, against the index loop.
template <int Axis>
void check_positive(const cube& v, std::size_t begin, std::size_t end, std::size_t step) {
  SCOPED_TRACE("axis " + std::to_string(Axis) + " [" + std::to_string(begin) + ", " + std::to_string(end) + ") step " +
               std::to_string(step));
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn>>();
  const auto e = narrow<Axis>(x, begin, end, step);
  std::array<std::size_t, 3> extents;
  const auto want = pick(v, std::size_t(Axis < 0 ? Axis + 3 : Axis),
                         python_range(std::int64_t(begin), std::int64_t(end), std::int64_t(step)), extents);
  expect_bits(eval(e, x = v), want, extents);
  // Through a fused pass (the view read with its stride inside an elementwise loop).
  const auto doubled = eval(e * 1.0f, x = v);
  expect_bits(doubled, want, extents);
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  const auto interpreted = interpreter(to_graph(e * 1.0f)).run(feeds)[0];
  for (std::size_t q = 0; q < want.size(); ++q)
    EXPECT_EQ(std::bit_cast<std::uint32_t>(interpreted.data<float>()[q]), std::bit_cast<std::uint32_t>(want[q])) << q;
}

TEST(SliceSteps, PositiveStepsOnEveryAxisMatchPythonRanges) {
  const cube v = special_cube(1);
  check_positive<0>(v, 0, 3, 2);
  check_positive<0>(v, 1, 3, 1);
  check_positive<1>(v, 0, 11, 3);
  check_positive<1>(v, 1, 10, 4);
  check_positive<1>(v, 2, 11, 20);  // a step past the extent: one element
  check_positive<1>(v, 5, 5, 2);    // empty
  check_positive<-1>(v, 1, 6, 2);
  check_positive<2>(v, 0, 6, 5);
  check_positive<-3>(v, 2, 3, 7);
}

// x[begin:end:-step] along Axis as flip + slice, against the index loop.
template <int Axis>
void check_negative(const cube& v, std::int64_t begin, std::int64_t end, std::size_t step) {
  SCOPED_TRACE("axis " + std::to_string(Axis) + " " + std::to_string(begin) + ":" + std::to_string(end) + ":-" +
               std::to_string(step));
  constexpr std::size_t axis = std::size_t(Axis < 0 ? Axis + 3 : Axis);
  const std::int64_t n = std::int64_t(std::array{A, B, C}[axis]);
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn>>();
  // Indices begin, begin - step, ... above end are n-1-begin, ... below n-1-end of the flipped axis.
  const auto e = narrow<Axis>(flip<Axis>(x), std::size_t(n - 1 - begin), std::size_t(n - 1 - end), step);
  std::array<std::size_t, 3> extents;
  const auto want = pick(v, axis, python_range(begin, end, -std::int64_t(step)), extents);
  expect_bits(eval(e, x = v), want, extents);
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  const auto interpreted = interpreter(to_graph(e)).run(feeds)[0];
  for (std::size_t q = 0; q < want.size(); ++q)
    EXPECT_EQ(std::bit_cast<std::uint32_t>(interpreted.data<float>()[q]), std::bit_cast<std::uint32_t>(want[q])) << q;
}

TEST(SliceSteps, NegativeStepsAreFlipThenSlice) {
  const cube v = special_cube(2);
  check_negative<1>(v, 10, -1, 1);  // the whole axis reversed (x[::-1])
  check_negative<1>(v, 9, 0, 3);
  check_negative<1>(v, 8, 1, 2);
  check_negative<0>(v, 2, -1, 2);
  check_negative<-1>(v, 5, 0, 4);
  check_negative<2>(v, 3, 3, 1);  // empty
}

TEST(SliceSteps, FlipKeepsAnyDtypeAndIsItsOwnInverse) {
  const auto ids = placeholder<"ids", std::int64_t, shape<2, 5>>();
  tensor<std::int64_t, shape<2, 5>> iv({2, 5}, uninitialized);
  for (std::size_t k = 0; k < iv.size(); ++k) iv.data()[k] = std::int64_t(k) * 1000000007LL - 3;
  const auto r = eval(flip<-1>(ids), ids = iv);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 5; ++j) EXPECT_EQ(r(i, j), iv(i, 4 - j));
  const auto back = eval(flip<0>(flip<0>(ids)), ids = iv);
  for (std::size_t k = 0; k < iv.size(); ++k) EXPECT_EQ(back.data()[k], iv.data()[k]);
  const auto mask = eval(flip<0>(ids > std::int64_t(0)), ids = iv);
  for (std::size_t j = 0; j < 5; ++j) EXPECT_EQ(mask(0, j), iv(1, j) > 0);
}

TEST(SliceSteps, ScatterWithAStepPlacesPartsAtTheSteppedIndices) {
  const auto part = placeholder<"part", double, shape<dyn, 3>>();
  const auto like = placeholder<"like", double, shape<dyn, 9>>();
  tensor<double, shape<dyn, 3>> pv({2, 3}, uninitialized);
  for (std::size_t k = 0; k < pv.size(); ++k) pv.data()[k] = double(k) + 0.5;
  pv.data()[1] = -0.0;
  const tensor<double, shape<dyn, 9>> lv({2, 9}, std::numeric_limits<double>::quiet_NaN());
  const auto e = scatter<1>(part, like, 1, 8, 3);  // indices 1, 4, 7
  const auto r = eval(e, part = pv, like = lv);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 9; ++j) {
      const double want = j % 3 == 1 ? pv(i, j / 3) : 0.0;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(r(i, j)), std::bit_cast<std::uint64_t>(want)) << i << "," << j;
    }
  runtime_feeds feeds;
  feeds.insert_or_assign("part", runtime_tensor(pv));
  feeds.insert_or_assign("like", runtime_tensor(lv));
  const auto interpreted = interpreter(to_graph(e)).run(feeds)[0];
  for (std::size_t k = 0; k < r.size(); ++k)
    EXPECT_EQ(std::bit_cast<std::uint64_t>(interpreted.data<double>()[k]), std::bit_cast<std::uint64_t>(r.data()[k]));
  // A part that does not fit the stepped indices is a shape error naming the op.
  const tensor<double, shape<dyn, 3>> wrong({2, 3}, 1.0);
  EXPECT_THROW((void)eval(scatter<1>(part, like, 1, 9, 2), part = wrong, like = lv), shape_error);
}

TEST(SliceSteps, GradientsMatchCentralDifferences) {
  auto x = placeholder<"x", double, shape<5, 9>>();
  tensor<double, shape<5, 9>> xv({5, 9}, uninitialized);
  std::mt19937 rng(7);
  std::normal_distribution<double> n(0, 1);
  for (auto& v : xv) v = n(rng);
  const auto loss = sum(sin(narrow<1>(x, 1, 9, 3)) * narrow<1>(x, 0, 7, 3)) + sum(square(narrow<0>(flip<0>(x), 0, 5, 2)));
  const auto c = check_gradient(loss, x, x = xv);
  EXPECT_LT(c.max_relative_error, 1e-7) << c.symbolic_at_worst << " vs " << c.numeric_at_worst;
  // The run-time gradient of the same graph equals the compiled one.
  symflow::testing::expect_runtime_gradient_matches(loss, x, xv, 1e-12);
}

TEST(SliceSteps, BadStepsAndRangesAreShapeErrors) {
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn>>();
  const cube v = special_cube(3);
  EXPECT_THROW((void)eval(narrow<1>(x, 0, 11, 0), x = v), shape_error);
  EXPECT_THROW((void)eval(narrow<1>(x, 0, 12, 2), x = v), shape_error);
  EXPECT_THROW((void)eval(narrow<1>(x, 5, 4, 1), x = v), shape_error);
}

TEST(SliceSteps, AGraphWithoutStepAttributesReadsStepOne) {
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn>>();
  const cube v = special_cube(4);
  graph g = to_graph(narrow<1>(x, 2, 9) * 2.0f);
  std::size_t removed = 0;
  for (auto& node : g.nodes)
    if (node.op == "slice")
      removed += std::erase_if(node.attributes, [](const graph_attribute& a) { return a.key == "step"; });
  ASSERT_EQ(removed, 1u);
  ASSERT_NO_THROW(validate(g));
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  const auto got = interpreter(g).run(feeds)[0];
  const auto want = eval(narrow<1>(x, 2, 9) * 2.0f, x = v);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < want.size(); ++k)
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got.data<float>()[k]), std::bit_cast<std::uint32_t>(want.data()[k]));
  // A step of 0 in a file is refused with the node's op named, never run.
  for (auto& node : g.nodes)
    if (node.op == "slice") node.attributes.push_back({"step", std::int64_t(0)});
  EXPECT_THROW((void)interpreter(g).run(feeds), symflow::error);
}

}  // namespace
