// layer_norm and rms_norm (ops/normalization.hpp) against PyTorch's definitions written out here in
// long double (biased variance, eps inside the square root), over the last axis and over the last
// two, at odd widths, with gamma/beta as tensors and as numbers; typed against graph handles run by
// the interpreter; gradients of x, gamma and beta against central finite differences in float64.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <symflow/debug/check_gradient.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

namespace {
using namespace symflow;
using ld = long double;

constexpr std::size_t rows = 5, mid = 3, width = 37;

template <class T, class S>
tensor<T, S> random_tensor(std::array<std::size_t, S::rank> e, unsigned seed, double scale = 3, double offset = 0) {
  tensor<T, S> t(e, uninitialized);
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(offset, scale);
  for (auto& v : t) v = T(n(rng));
  return t;
}

// Normalises each group of `n` consecutive elements of x (the normalised axes, row-major last). The
// bound on a float computation's error goes with it: the mean's rounding (about sqrt(n) ulps of the
// row's magnitude) relative to the deviation, times gamma.
struct expected {
  std::vector<ld> value, tolerance;
};
expected reference(const float* x, std::size_t count, std::size_t n, const float* gamma, const float* beta, ld eps,
                   bool rms) {
  expected want{std::vector<ld>(count), std::vector<ld>(count)};
  auto& out = want.value;
  for (std::size_t r = 0; r < count / n; ++r) {
    const float* row = x + r * n;
    ld mean = 0, second = 0;
    for (std::size_t i = 0; i < n; ++i) mean += row[i];
    mean = rms ? 0 : mean / ld(n);
    for (std::size_t i = 0; i < n; ++i) second += (row[i] - mean) * (row[i] - mean);
    const ld inv = 1 / std::sqrt(second / ld(n) + eps);
    ld magnitude = 0;
    for (std::size_t i = 0; i < n; ++i) magnitude = std::max<ld>(magnitude, std::fabs(row[i]));
    const ld condition = 1 + magnitude * inv;  // |x| / deviation: how much the centring cancels
    for (std::size_t i = 0; i < n; ++i) {
      const ld b = beta ? ld(beta[i % width]) : 0, g = gamma[i % width];
      out[r * n + i] = (row[i] - mean) * inv * g + b;
      want.tolerance[r * n + i] = 4 * std::sqrt(ld(n)) * 6e-8L * condition * (std::fabs(g) + 1) + 2e-7L * std::fabs(b);
    }
  }
  return want;
}

void expect_close(const float* got, const expected& want, const char* what) {
  for (std::size_t i = 0; i < want.value.size(); ++i)
    EXPECT_NEAR(got[i], double(want.value[i]), double(want.tolerance[i])) << what << " at " << i;
}

TEST(Normalization, LayerNormAndRmsNormMatchTheirDefinitions) {
  auto x = placeholder<"x", float, shape<dyn, mid, width>>();
  auto gamma = placeholder<"gamma", float, shape<width>>();
  auto beta = placeholder<"beta", float, shape<width>>();
  // Rows far from zero mean and at very different scales: the centred variance must not cancel.
  auto xv = random_tensor<float, shape<dyn, mid, width>>({rows, mid, width}, 1, 2.5, 40);
  for (std::size_t k = 0; k < width; ++k) xv(1, 2, k) = 1e-3f * float(k % 5);  // a nearly constant row
  const auto gv = random_tensor<float, shape<width>>({width}, 2, 1, 1);
  const auto bv = random_tensor<float, shape<width>>({width}, 3);
  const auto [ln, rn, ln2, ln_plain] =
      eval(layer_norm(x, gamma, beta), rms_norm(x, gamma), layer_norm(x, gamma, beta, 1e-3, axes<-2, -1>),
           layer_norm(x, 1.0f, 0.0f, 0.0), x = xv, gamma = gv, beta = bv);
  const std::size_t n = xv.size();
  expect_close(ln.data(), reference(xv.data(), n, width, gv.data(), bv.data(), 1e-5L, false), "layer_norm");
  expect_close(rn.data(), reference(xv.data(), n, width, gv.data(), nullptr, 1e-5L, true), "rms_norm");
  // Over the last two axes gamma [width] broadcasts along `mid`: reference on groups of mid * width.
  expect_close(ln2.data(), reference(xv.data(), n, mid * width, gv.data(), bv.data(), 1e-3L, false), "layer_norm 2 axes");
  std::vector<float> ones(width, 1.0f);
  expect_close(ln_plain.data(), reference(xv.data(), n, width, ones.data(), nullptr, 0.0L, false), "layer_norm, no affine");
}

TEST(Normalization, GraphHandlesGiveTheTypedBits) {
  auto x = placeholder<"x", float, shape<dyn, width>>();
  auto gamma = placeholder<"gamma", float, shape<width>>();
  const auto xv = random_tensor<float, shape<dyn, width>>({rows, width}, 4);
  const auto gv = random_tensor<float, shape<width>>({width}, 5);
  const auto [ln, rn] = eval(layer_norm(x, gamma, 0.5f), rms_norm(x, gamma, 1e-6), x = xv, gamma = gv);
  graph_builder b;
  auto hx = b.input("x", dtype::f32, {-1, std::int64_t(width)});
  auto hg = b.input("gamma", dtype::f32, {std::int64_t(width)});
  const graph g = b.build({layer_norm(hx, hg, 0.5), rms_norm(hx, hg, 1e-6)});
  runtime_feeds feeds;
  runtime_tensor tx(dtype::f32, runtime_extents{rows, width}), tg(dtype::f32, runtime_extents{width});
  std::memcpy(tx.bytes(), xv.data(), tx.byte_size());
  std::memcpy(tg.bytes(), gv.data(), tg.byte_size());
  feeds.insert_or_assign("x", std::move(tx));
  feeds.insert_or_assign("gamma", std::move(tg));
  const auto out = run_graph(g, feeds);
  ASSERT_EQ(out.size(), 2u);
  // The interpreter accumulates means in double, the fused loop in float: within a few ulps.
  for (std::size_t i = 0; i < ln.size(); ++i) {
    EXPECT_NEAR(reinterpret_cast<const float*>(out[0].bytes())[i], ln.data()[i], 2e-6 * (1 + std::fabs(ln.data()[i]))) << i;
    EXPECT_NEAR(reinterpret_cast<const float*>(out[1].bytes())[i], rn.data()[i], 2e-6 * (1 + std::fabs(rn.data()[i]))) << i;
  }
}

TEST(Normalization, GradientsOfInputScaleAndShiftMatchFiniteDifferences) {
  auto x = placeholder<"x", double, shape<dyn, width>>();
  auto gamma = placeholder<"gamma", double, shape<width>>();
  auto beta = placeholder<"beta", double, shape<width>>();
  auto w = placeholder<"w", double, shape<dyn, width>>();
  const auto xv = random_tensor<double, shape<dyn, width>>({rows, width}, 6, 2, 1);
  const auto gv = random_tensor<double, shape<width>>({width}, 7);
  const auto bv = random_tensor<double, shape<width>>({width}, 8);
  const auto wv = random_tensor<double, shape<dyn, width>>({rows, width}, 9);
  const auto ln = sum(layer_norm(x, gamma, beta) * w);
  const auto rn = sum(rms_norm(x, gamma) * w);
  for (const auto& c : {check_gradient(ln, x, x = xv, gamma = gv, beta = bv, w = wv),
                        check_gradient(ln, gamma, x = xv, gamma = gv, beta = bv, w = wv),
                        check_gradient(ln, beta, x = xv, gamma = gv, beta = bv, w = wv),
                        check_gradient(rn, x, x = xv, gamma = gv, w = wv), check_gradient(rn, gamma, x = xv, gamma = gv, w = wv)})
    EXPECT_LT(c.max_relative_error, 1e-7) << c.symbolic_at_worst << " vs " << c.numeric_at_worst << " at " << c.worst_element;
}

}  // namespace
