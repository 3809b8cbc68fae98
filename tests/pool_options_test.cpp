// Pooling with padding, ceil rounding, count_include_pad and dilation (ops/pool2d.hpp), and 1-D pooling
// (ops/pool1d.hpp), against PyTorch's CPU pooling algorithm written out here in float64
// (aten/src/ATen/native: pooling_output_shape and the avg/max pool loops: hstart = oh*stride - pad,
// hend = min(hstart + k, H + pad), pool_size taken before clamping to the input): odd extents,
// every option combination, NaN/Inf, gradients against central differences, the graph interpreter
// and run-time differentiation against compiled evaluation, and asymmetric pads in a graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cmath>
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

// PyTorch's pooling_output_shape_pad_lr.
std::size_t torch_out(std::size_t in, std::size_t k, std::size_t s, std::size_t pad_l, std::size_t pad_r, bool ceil,
                      std::size_t d = 1) {
  const std::int64_t num = std::int64_t(in + pad_l + pad_r) - std::int64_t(d * (k - 1)) - 1 + (ceil ? std::int64_t(s) - 1 : 0);
  std::int64_t out = num / std::int64_t(s) + 1;
  if (ceil && (out - 1) * std::int64_t(s) >= std::int64_t(in + pad_l)) --out;
  return std::size_t(out);
}

struct pool_case {
  std::size_t kh, kw, sh, sw, top, left, bottom, right;
  bool ceil, include_pad, max;
  std::size_t dh = 1, dw = 1;
};

// The reference pooling of x [N, H, W, C] (float64), NaN-aware as PyTorch's CPU max pool is
// not: symflow's scan keeps the first maximum by strict >, so the reference does the same. Each
// window position (hs + i * dh, ws + j * dw) is enumerated: those inside x are read, those inside
// the padded input are counted for count_include_pad (ONNX AveragePool's count with dilations).
// With `where`, max pooling also gives each maximum's position h * W + w (PyTorch's indices).
std::vector<double> reference(const pool_case& p, const std::vector<double>& x, std::size_t N, std::size_t H, std::size_t W,
                              std::size_t C, std::size_t& OH, std::size_t& OW, std::vector<std::int64_t>* where = nullptr) {
  OH = torch_out(H, p.kh, p.sh, p.top, p.bottom, p.ceil, p.dh);
  OW = torch_out(W, p.kw, p.sw, p.left, p.right, p.ceil, p.dw);
  std::vector<double> y(N * OH * OW * C);
  if (where) where->assign(y.size(), -1);
  for (std::size_t n = 0; n < N; ++n)
    for (std::size_t oh = 0; oh < OH; ++oh)
      for (std::size_t ow = 0; ow < OW; ++ow)
        for (std::size_t c = 0; c < C; ++c) {
          const std::int64_t hs = std::int64_t(oh * p.sh) - std::int64_t(p.top), ws = std::int64_t(ow * p.sw) - std::int64_t(p.left);
          double acc = 0;
          bool first = true;
          std::int64_t inside = 0, padded = 0;
          for (std::size_t i = 0; i < p.kh; ++i)
            for (std::size_t j = 0; j < p.kw; ++j) {
              const std::int64_t h = hs + std::int64_t(i * p.dh), w = ws + std::int64_t(j * p.dw);
              if (h < std::int64_t(H + p.bottom) && w < std::int64_t(W + p.right)) ++padded;
              if (h < 0 || w < 0 || h >= std::int64_t(H) || w >= std::int64_t(W)) continue;
              ++inside;
              const double v = x[((n * H + std::size_t(h)) * W + std::size_t(w)) * C + c];
              if (p.max) {
                if (first || v > acc) {
                  acc = v;
                  if (where) (*where)[((n * OH + oh) * OW + ow) * C + c] = h * std::int64_t(W) + w;
                }
              } else {
                acc += v;
              }
              first = false;
            }
          if (!p.max) acc /= double(p.include_pad ? padded : inside);
          y[((n * OH + oh) * OW + ow) * C + c] = acc;
        }
  return y;
}

template <class T>
tensor<T, shape<dyn, dyn, dyn, dyn>> random_images(std::size_t N, std::size_t H, std::size_t W, std::size_t C, unsigned seed,
                                                  bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-3, 3);
  tensor<T, shape<dyn, dyn, dyn, dyn>> t({N, H, W, C}, T(0));
  for (auto& v : t) v = T(u(rng));
  if (specials) {
    t.data()[5] = std::numeric_limits<T>::quiet_NaN();
    t.data()[17] = std::numeric_limits<T>::infinity();
    t.data()[t.size() - 4] = -std::numeric_limits<T>::infinity();
    t.data()[30] = T(-0.0);
  }
  return t;
}

// One typed pooling against the reference, and its graph form through the interpreter.
template <std::size_t K, std::size_t S, std::size_t P, pool_options O, bool Max, std::size_t D = 1>
void check_typed(std::size_t H, std::size_t W, unsigned seed) {
  constexpr bool ceil = has_option(O, pool_options::ceil_mode), include = has_option(O, pool_options::count_include_pad);
  SCOPED_TRACE(std::string(Max ? "max" : "avg") + " window " + std::to_string(K) + " stride " + std::to_string(S) + " pad " +
               std::to_string(P) + " dilation " + std::to_string(D) + (ceil ? " ceil" : "") +
               (include ? " count_include_pad" : "") + " on " + std::to_string(H) + "x" + std::to_string(W));
  const std::size_t N = 2, C = 3;
  const auto x = placeholder<"x", double, shape<dyn, dyn, dyn, dyn>>();
  const auto v = random_images<double>(N, H, W, C, seed, true);
  const auto e = [&] {
    if constexpr (Max) return max_pool2d<K, S, P, O, D>(x);
    else return avg_pool2d<K, S, P, O, D>(x);
  }();
  const auto got = eval(e, x = v);
  std::size_t OH = 0, OW = 0;
  const auto want = reference({K, K, S, S, P, P, P, P, ceil, include, Max, D, D}, std::vector<double>(v.begin(), v.end()), N,
                              H, W, C, OH, OW);
  ASSERT_EQ(got.extent(1), OH);
  ASSERT_EQ(got.extent(2), OW);
  for (std::size_t q = 0; q < want.size(); ++q) {
    if (std::isnan(want[q])) EXPECT_TRUE(std::isnan(got.data()[q])) << q;
    else if (std::isinf(want[q])) EXPECT_EQ(got.data()[q], want[q]) << q;
    else EXPECT_NEAR(got.data()[q], want[q], 1e-12 * (1 + std::abs(want[q]))) << q;
  }
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  const auto interpreted = interpreter(to_graph(e)).run(feeds)[0];
  ASSERT_EQ(interpreted.size(), got.size());
  for (std::size_t q = 0; q < got.size(); ++q)
    EXPECT_TRUE(interpreted.data<double>()[q] == got.data()[q] || (std::isnan(got.data()[q]) && std::isnan(interpreted.data<double>()[q])));
}

TEST(PoolOptions, MaxPoolingMatchesTorchsAlgorithm) {
  check_typed<2, 2, 0, pool_options::none, true>(7, 6, 1);
  check_typed<3, 2, 1, pool_options::none, true>(7, 6, 2);
  check_typed<3, 2, 1, pool_options::ceil_mode, true>(7, 6, 3);
  check_typed<2, 2, 1, pool_options::ceil_mode, true>(5, 5, 4);  // the last window would start in the padding
  check_typed<3, 3, 0, pool_options::ceil_mode, true>(8, 7, 5);
  check_typed<4, 1, 3, pool_options::none, true>(5, 4, 6);
}

TEST(PoolOptions, AveragePoolingMatchesTorchsAlgorithm) {
  check_typed<2, 2, 0, pool_options::none, false>(7, 6, 7);
  check_typed<3, 2, 1, pool_options::none, false>(7, 6, 8);
  check_typed<3, 2, 1, pool_options::count_include_pad, false>(7, 6, 9);
  check_typed<3, 2, 1, pool_options::ceil_mode, false>(7, 6, 10);
  check_typed<3, 2, 1, pool_options::ceil_mode | pool_options::count_include_pad, false>(8, 5, 11);
  check_typed<2, 2, 1, pool_options::ceil_mode | pool_options::count_include_pad, false>(5, 5, 12);
  check_typed<3, 3, 0, pool_options::ceil_mode | pool_options::count_include_pad, false>(8, 7, 13);  // past the input, not padding
  check_typed<5, 3, 2, pool_options::count_include_pad, false>(6, 9, 14);
}

TEST(PoolOptions, WorkedExamples) {
  // [[4]] padded by 1, window 2, stride 1: four windows holding the one element.
  const auto x = placeholder<"x", float, shape<1, 1, 1, 1>>();
  const tensor<float, shape<1, 1, 1, 1>> four({1, 1, 1, 1}, 4.f);
  const auto excl = eval(avg_pool2d<2, 1, 1>(x), x = four);
  const auto incl = eval(avg_pool2d<2, 1, 1, pool_options::count_include_pad>(x), x = four);
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(excl.data()[k], 4.f);
    EXPECT_EQ(incl.data()[k], 1.f);
  }
  // torch.nn.MaxPool1d(3, stride=2, padding=1, ceil_mode=True) of 1..6 is [2, 4, 6, 6]? No: L' =
  // ceil((6 + 2 - 3) / 2) + 1 = 4, and the fourth window starts at 5 (inside the input): [2, 4, 6, 6].
  const auto s = placeholder<"s", float, shape<1, 6, 1>>();
  tensor<float, shape<1, 6, 1>> ramp({1, 6, 1}, 0.f);
  for (std::size_t k = 0; k < 6; ++k) ramp.data()[k] = float(k + 1);
  const auto m = eval(max_pool1d<3, 2, 1, pool_options::ceil_mode>(s), s = ramp);
  ASSERT_EQ(m.extent(1), 4u);
  const float want_max[] = {2, 4, 6, 6};
  for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(m.data()[k], want_max[k]) << k;
  // AvgPool1d(3, stride=2, padding=1) of 1..6, padding not counted: [1.5, 3, 5], counted: [1, 3, 5].
  const auto a = eval(avg_pool1d<3, 2, 1>(s), s = ramp);
  const auto ai = eval(avg_pool1d<3, 2, 1, pool_options::count_include_pad>(s), s = ramp);
  const float want_avg[] = {1.5f, 3, 5}, want_avg_incl[] = {1, 3, 5};
  ASSERT_EQ(a.extent(1), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_FLOAT_EQ(a.data()[k], want_avg[k]) << k;
    EXPECT_FLOAT_EQ(ai.data()[k], want_avg_incl[k]) << k;
  }
}

TEST(PoolOptions, OneDimensionalPoolingIsTwoDimensionalOnOneRow) {
  const auto s = placeholder<"s", double, shape<dyn, 11, 4>>();
  const auto v4 = random_images<double>(3, 1, 11, 4, 21, true);
  tensor<double, shape<dyn, 11, 4>> v({3, 11, 4}, 0.0);
  std::copy(v4.begin(), v4.end(), v.begin());
  const auto m = eval(max_pool1d<4, 3, 2, pool_options::ceil_mode>(s), s = v);
  const auto a = eval(avg_pool1d<3, 2, 1, pool_options::count_include_pad>(s), s = v);
  std::size_t OH = 0, OW = 0;
  const std::vector<double> flat(v.begin(), v.end());
  const auto want_m = reference({1, 4, 1, 3, 0, 2, 0, 2, true, false, true}, flat, 3, 1, 11, 4, OH, OW);
  ASSERT_EQ(m.extent(1), OW);
  for (std::size_t q = 0; q < want_m.size(); ++q)
    if (!std::isnan(want_m[q])) EXPECT_EQ(m.data()[q], want_m[q]) << q;
  const auto want_a = reference({1, 3, 1, 2, 0, 1, 0, 1, false, true, false}, flat, 3, 1, 11, 4, OH, OW);
  ASSERT_EQ(a.extent(1), OW);
  for (std::size_t q = 0; q < want_a.size(); ++q)
    if (std::isinf(want_a[q])) EXPECT_EQ(a.data()[q], want_a[q]) << q;
    else if (!std::isnan(want_a[q])) EXPECT_NEAR(a.data()[q], want_a[q], 1e-12 * (1 + std::abs(want_a[q]))) << q;
}

TEST(PoolOptions, GradientsMatchCentralDifferences) {
  auto x = placeholder<"x", double, shape<2, 7, 6, 3>>();
  tensor<double, shape<2, 7, 6, 3>> xv({2, 7, 6, 3}, 0.0);
  // Distinct values, so every window's maximum is strict and the max gradient is smooth nearby.
  std::vector<double> vals(xv.size());
  for (std::size_t k = 0; k < vals.size(); ++k) vals[k] = double(k) * 0.01 - 1.3;
  std::shuffle(vals.begin(), vals.end(), std::mt19937(5));
  std::copy(vals.begin(), vals.end(), xv.begin());
  const auto w = constant(random_images<double>(2, 4, 4, 3, 9, false));
  const auto loss = sum(sin(avg_pool2d<3, 2, 1, pool_options::ceil_mode>(x)) * w) +
                    sum(square(max_pool2d<3, 2, 1, pool_options::ceil_mode>(x)) * w) +
                    sum(exp(avg_pool2d<2, 2, 1, pool_options::count_include_pad>(x)));
  const auto c = check_gradient(loss, x, x = xv);
  EXPECT_LT(c.max_relative_error, 1e-7) << c.symbolic_at_worst << " vs " << c.numeric_at_worst;
  symflow::testing::expect_runtime_gradient_matches(loss, x, xv, 1e-12);
  // The tangent of average pooling (linear) against the gradient's transpose: <jvp(t), w> = <t, vjp(w)>.
  auto ones = constant(tensor<double, shape<2, 7, 6, 3>>({2, 7, 6, 3}, 1.0));
  const auto lin = sum(avg_pool2d<3, 2, 1, pool_options::ceil_mode | pool_options::count_include_pad>(x) * w);
  const double directional = eval(jvp(lin, x, ones), x = xv)();
  const double through_grad = eval(sum(grad(lin, x)), x = xv)();
  EXPECT_NEAR(directional, through_grad, 1e-12);
}

TEST(PoolOptions, AGraphMayPadTheTwoSidesDifferently) {
  const auto x = placeholder<"x", double, shape<dyn, dyn, dyn, dyn>>();
  const auto v = random_images<double>(2, 7, 6, 3, 31, false);
  for (const bool max : {true, false}) {
    graph g = max ? to_graph(max_pool2d<3, 2>(x)) : to_graph(avg_pool2d<3, 2>(x));
    for (auto& node : g.nodes)
      if (node.op == "max_pool2d" || node.op == "avg_pool2d")
        for (auto& a : node.attributes) {
          if (a.key == "pads") a.value = std::vector<std::int64_t>{0, 2, 1, 1};
          if (a.key == "window") a.value = std::vector<std::int64_t>{3, 4};
        }
    // The node's type is recomputed by the builder; the interpreter checks extents as it runs.
    g.nodes.back().type.shape = {-1, -1, -1, -1};
    runtime_feeds feeds;
    feeds.insert_or_assign("x", runtime_tensor(v));
    const auto got = interpreter(g).run(feeds)[0];
    std::size_t OH = 0, OW = 0;
    const auto want = reference({3, 4, 2, 2, 0, 2, 1, 1, false, false, max}, std::vector<double>(v.begin(), v.end()), 2, 7, 6, 3,
                                OH, OW);
    ASSERT_EQ(got.extents()[1], OH);
    ASSERT_EQ(got.extents()[2], OW);
    for (std::size_t q = 0; q < want.size(); ++q) EXPECT_NEAR(got.data<double>()[q], want[q], 1e-12) << q;
  }
}

// Dilation (ONNX MaxPool/AveragePool dilations, torch.nn.MaxPool2d(dilation=...)): the window's
// positions are D apart, so the padded input must hold the span (K - 1) * D + 1.
TEST(PoolOptions, DilatedPoolingMatchesTheReference) {
  check_typed<2, 1, 0, pool_options::none, true, 2>(7, 6, 41);
  check_typed<3, 2, 1, pool_options::ceil_mode, true, 2>(9, 8, 42);
  check_typed<3, 1, 2, pool_options::none, true, 3>(8, 11, 43);
  check_typed<2, 3, 1, pool_options::ceil_mode, true, 3>(10, 7, 44);
  check_typed<2, 1, 0, pool_options::none, false, 2>(7, 6, 45);
  check_typed<3, 2, 1, pool_options::count_include_pad, false, 2>(9, 8, 46);
  check_typed<3, 2, 2, pool_options::ceil_mode | pool_options::count_include_pad, false, 2>(8, 9, 47);
  check_typed<2, 2, 1, pool_options::ceil_mode, false, 3>(10, 7, 48);
  // torch.nn.MaxPool1d(2, stride=1, dilation=2) of [1, 5, 2, 4, 3]: windows (0, 2), (1, 3), (2, 4).
  const auto s = placeholder<"s", float, shape<1, 5, 1>>();
  tensor<float, shape<1, 5, 1>> row({1, 5, 1}, 0.f);
  const float values[] = {1, 5, 2, 4, 3};
  std::copy(std::begin(values), std::end(values), row.begin());
  const auto m = eval(max_pool1d<2, 1, 0, pool_options::none, 2>(s), s = row);
  ASSERT_EQ(m.extent(1), 3u);
  EXPECT_EQ(m.data()[0], 2.f);
  EXPECT_EQ(m.data()[1], 5.f);
  EXPECT_EQ(m.data()[2], 3.f);
  const auto a = eval(avg_pool1d<2, 1, 0, pool_options::none, 2>(s), s = row);
  EXPECT_FLOAT_EQ(a.data()[0], 1.5f);
  EXPECT_FLOAT_EQ(a.data()[1], 4.5f);
  EXPECT_FLOAT_EQ(a.data()[2], 2.5f);
  static_assert(std::is_same_v<shape_of<decltype(max_pool2d<3, 1, 0, pool_options::none, 2>(
                                   std::declval<placeholder<"i", float, shape<2, 9, 7, 3>>>()))>,
                               shape<2, 5, 3, 3>>);
}

TEST(PoolOptions, DilatedGradientsMatchCentralDifferences) {
  auto x = placeholder<"x", double, shape<2, 8, 7, 3>>();
  tensor<double, shape<2, 8, 7, 3>> xv({2, 8, 7, 3}, 0.0);
  std::vector<double> vals(xv.size());
  for (std::size_t k = 0; k < vals.size(); ++k) vals[k] = double(k) * 0.01 - 1.7;
  std::shuffle(vals.begin(), vals.end(), std::mt19937(6));
  std::copy(vals.begin(), vals.end(), xv.begin());
  const auto w = constant(random_images<double>(2, 4, 3, 3, 19, false));  // the pooled extents
  const auto loss = sum(sin(avg_pool2d<3, 2, 1, pool_options::ceil_mode | pool_options::count_include_pad, 2>(x)) * w) +
                    sum(square(max_pool2d<3, 2, 1, pool_options::ceil_mode, 2>(x)) * w);
  const auto c = check_gradient(loss, x, x = xv);
  EXPECT_LT(c.max_relative_error, 1e-7) << c.symbolic_at_worst << " vs " << c.numeric_at_worst;
  symflow::testing::expect_runtime_gradient_matches(loss, x, xv, 1e-12);
}

// A graph may dilate the two axes differently; a dilated window that steps over the whole input
// (positions -1 and 2 of a 1-element axis) is refused, as a window of padding only would be.
TEST(PoolOptions, AGraphMayDilateTheTwoAxesDifferently) {
  const auto x = placeholder<"x", double, shape<dyn, dyn, dyn, dyn>>();
  const auto v = random_images<double>(2, 9, 8, 3, 33, true);
  auto dilate = [](graph g, std::vector<std::int64_t> window, std::vector<std::int64_t> pads, std::vector<std::int64_t> dilation) {
    for (auto& node : g.nodes)
      if (node.op == "max_pool2d" || node.op == "avg_pool2d")
        for (auto& a : node.attributes) {
          if (a.key == "window") a.value = window;
          if (a.key == "pads") a.value = pads;
          if (a.key == "dilation") a.value = dilation;
        }
    g.nodes.back().type.shape = {-1, -1, -1, -1};
    return g;
  };
  for (const bool max : {true, false}) {
    const graph g = dilate(max ? to_graph(max_pool2d<3, 2>(x)) : to_graph(avg_pool2d<3, 2>(x)), {3, 2}, {1, 0, 2, 1}, {2, 3});
    runtime_feeds feeds;
    feeds.insert_or_assign("x", runtime_tensor(v));
    const auto got = interpreter(g).run(feeds)[0];
    std::size_t OH = 0, OW = 0;
    pool_case p{3, 2, 2, 2, 1, 0, 2, 1, false, false, max};
    p.dh = 2, p.dw = 3;
    const auto want = reference(p, std::vector<double>(v.begin(), v.end()), 2, 9, 8, 3, OH, OW);
    ASSERT_EQ(got.extents()[1], OH);
    ASSERT_EQ(got.extents()[2], OW);
    for (std::size_t q = 0; q < want.size(); ++q) {
      const double have = got.data<double>()[q];
      if (std::isnan(want[q])) EXPECT_TRUE(std::isnan(have)) << q;
      else if (std::isinf(want[q])) EXPECT_EQ(have, want[q]) << q;
      else EXPECT_NEAR(have, want[q], 1e-12 * (1 + std::abs(want[q]))) << q;
    }
  }
  const graph stepping_over = dilate(to_graph(max_pool2d<3, 2>(x)), {2, 1}, {1, 0, 2, 0}, {3, 1});
  runtime_feeds one_row;
  one_row.insert_or_assign("x", runtime_tensor(tensor<double, shape<dyn, dyn, dyn, dyn>>({1, 1, 3, 1}, 1.0)));
  try {
    (void)interpreter(stepping_over).run(one_row);
    ADD_FAILURE() << "a window of padding only was accepted";
  } catch (const shape_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no input element"), std::string::npos) << e.what();
  }
}

// max_pool2d_indices against the reference's positions, and against max_pool2d itself: each
// pooled value is the element of x its index names. Ties (the rounded values repeat), NaN, Inf and
// -0 included; the graph form through the interpreter gives the same indices.
template <std::size_t K, std::size_t S, std::size_t P, pool_options O, std::size_t D = 1>
void check_indices(std::size_t H, std::size_t W, unsigned seed) {
  SCOPED_TRACE("window " + std::to_string(K) + " stride " + std::to_string(S) + " pad " + std::to_string(P) + " dilation " +
               std::to_string(D) + " on " + std::to_string(H) + "x" + std::to_string(W));
  const std::size_t N = 2, C = 3;
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn, dyn>>();
  auto v = random_images<float>(N, H, W, C, seed, true);
  for (std::size_t q = 40; q < v.size(); ++q) v.data()[q] = std::round(v.data()[q]);  // many ties
  const auto indices = eval(max_pool2d_indices<K, S, P, O, D>(x), x = v);
  const auto pooled = eval(max_pool2d<K, S, P, O, D>(x), x = v);
  static_assert(std::is_same_v<value_type_of<decltype(max_pool2d_indices<K, S, P, O, D>(x))>, std::int64_t>);
  std::size_t OH = 0, OW = 0;
  std::vector<std::int64_t> want;
  const std::vector<double> flat(v.begin(), v.end());
  (void)reference({K, K, S, S, P, P, P, P, has_option(O, pool_options::ceil_mode), false, true, D, D}, flat, N, H, W, C, OH, OW,
                  &want);
  ASSERT_EQ(indices.extent(1), OH);
  ASSERT_EQ(indices.extent(2), OW);
  for (std::size_t q = 0; q < want.size(); ++q) {
    EXPECT_EQ(indices.data()[q], want[q]) << q;
    const std::size_t n = q / (OH * OW * C), c = q % C, k = std::size_t(indices.data()[q]);
    ASSERT_LT(k, H * W) << q;
    const float taken = v.data()[(n * H * W + k) * C + c], have = pooled.data()[q];
    EXPECT_TRUE(std::bit_cast<std::uint32_t>(taken) == std::bit_cast<std::uint32_t>(have)) << q << ": " << taken << " " << have;
  }
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(v));
  const auto interpreted = interpreter(to_graph(max_pool2d_indices<K, S, P, O, D>(x))).run(feeds)[0];
  ASSERT_EQ(interpreted.type(), dtype::i64);
  ASSERT_EQ(interpreted.size(), indices.size());
  for (std::size_t q = 0; q < indices.size(); ++q) EXPECT_EQ(interpreted.data<std::int64_t>()[q], indices.data()[q]) << q;
}

TEST(PoolOptions, IndicesNameTheElementsMaxPoolingTook) {
  check_indices<2, 2, 0, pool_options::none>(6, 8, 51);
  check_indices<3, 2, 1, pool_options::ceil_mode>(7, 6, 52);
  check_indices<3, 1, 1, pool_options::none>(5, 9, 53);
  check_indices<2, 1, 1, pool_options::ceil_mode, 2>(9, 7, 54);
  check_indices<3, 2, 2, pool_options::none, 3>(11, 10, 55);
  // The doc's example: window [1, 2], stride [1, 1] of the row [4, 9, 9, 1] gives [1, 1, 2].
  const auto r = placeholder<"r", float, shape<1, 1, 4, 1>>();
  tensor<float, shape<1, 1, 4, 1>> row({1, 1, 4, 1}, 0.f);
  const float values[] = {4, 9, 9, 1};
  std::copy(std::begin(values), std::end(values), row.begin());
  const auto k = eval(make_kernel(ops::max_pool2d_indices_op<1, 2, 1, 1, 0, 0, pool_options::none>{}, source_site{}, r), r = row);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k.data()[0], 1);
  EXPECT_EQ(k.data()[1], 1);
  EXPECT_EQ(k.data()[2], 2);
}

TEST(PoolOptions, RefusedGeometriesAreShapeErrors) {
  const auto x = placeholder<"x", float, shape<dyn, dyn, dyn, dyn>>();
  const tensor<float, shape<dyn, dyn, dyn, dyn>> small({1, 2, 2, 1}, 1.f);
  EXPECT_THROW((void)eval(max_pool2d<3>(x), x = small), shape_error);                   // the window does not fit
  EXPECT_NO_THROW((void)eval(max_pool2d<3, 1, 1>(x), x = small));                      // it fits once padded
  graph g = to_graph(avg_pool2d<2>(x));
  for (auto& node : g.nodes)
    for (auto& a : node.attributes)
      if (a.key == "pads") a.value = std::vector<std::int64_t>{2, 0, 0, 0};  // a pad as large as the window
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(tensor<float, shape<dyn, dyn, dyn, dyn>>({1, 4, 4, 1}, 1.f)));
  EXPECT_THROW((void)interpreter(g).run(feeds), symflow::error);
  // A window and a dilation each within the attributes' limit (2^40) whose span is not: (2^24) *
  // 2^40 would wrap to a span of 1 in 64 bits and pool single elements.
  graph huge = to_graph(max_pool2d<2>(x));
  for (auto& node : huge.nodes)
    for (auto& a : node.attributes) {
      if (a.key == "window") a.value = std::vector<std::int64_t>{(std::int64_t(1) << 24) + 1, 1};
      if (a.key == "dilation") a.value = std::vector<std::int64_t>{std::int64_t(1) << 40, 1};
    }
  try {
    (void)interpreter(huge).run(feeds);
    ADD_FAILURE() << "a span past 2^40 was accepted";
  } catch (const symflow::error& e) {
    EXPECT_NE(std::string(e.what()).find("span"), std::string::npos) << e.what();
  }
}

// every_window_reads_input counts the windows that miss the input in O(log) of the extents (a
// graph's declared extents may be 2^40): it says what scanning every window says, on random axes
// with odd extents, strides, dilations and pads (a quarter of them refused), and answers at once for
// an axis of 2^40 windows.
TEST(PoolOptions, WhetherEveryWindowReadsTheInputIsCountedNotScanned) {
  using ops::pool_detail::axis_geometry;
  auto scanned = [](const axis_geometry& a) {
    for (std::size_t o = 0; o < a.out; ++o)
      if (a.count(o) == 0) return false;
    return true;
  };
  std::mt19937_64 rng(19);
  std::size_t checked = 0, refused = 0;
  for (int k = 0; k < 200000; ++k) {
    axis_geometry a{rng() % 50, 1 + rng() % 6, 1 + rng() % 30, 0, 0, 0, 1 + rng() % 60};
    a.before = rng() % a.span();
    a.after = rng() % a.span();
    a.out = ops::pool_detail::output_extent(a.in, a.span(), a.stride, a.before, a.after, rng() % 2 == 0);
    if (a.out == 0) continue;
    const bool want = scanned(a);
    ASSERT_EQ(ops::pool_detail::every_window_reads_input(a), want)
        << "in " << a.in << " window " << a.window << " stride " << a.stride << " dilation " << a.dilation << " pads "
        << a.before << ", " << a.after << " out " << a.out;
    ++checked;
    refused += !want;
  }
  EXPECT_GT(checked, 100000u);
  EXPECT_GT(refused, checked / 10);
  const std::size_t far = std::size_t(1) << 40;
  axis_geometry wide{1, 2, 1, far - 1, 1, 0, far};  // 2^40 windows start in the padding
  wide.out = ops::pool_detail::output_extent(wide.in, wide.span(), 1, wide.before, wide.after, false);
  EXPECT_FALSE(ops::pool_detail::every_window_reads_input(wide));
  axis_geometry long_input{far, 3, 1, 2, 2, 0, 2};
  long_input.out = ops::pool_detail::output_extent(long_input.in, long_input.span(), 1, 2, 2, false);
  EXPECT_TRUE(ops::pool_detail::every_window_reads_input(long_input));
}

}  // namespace
