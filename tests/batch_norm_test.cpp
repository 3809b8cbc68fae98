// batch_norm, batch_norm_inference and batch_statistics (ops/normalization.hpp) against float64
// references written out per channel: NHWC images and [N, D] rows with odd extents, the unbiased
// variance of the running statistics, gradients against central differences, and the graph
// interpreter against compiled evaluation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

constexpr std::size_t N = 3, H = 2, W = 5, C = 4;
using images = tensor<double, shape<dyn, H, W, C>>;
using channels = tensor<double, shape<C>>;

template <class Tensor>
void fill(Tensor& t, unsigned seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  for (auto& v : t) v = d(rng);
}

struct reference {
  std::vector<double> mean = std::vector<double>(C, 0.0), biased = std::vector<double>(C, 0.0);
  explicit reference(const images& x) {
    const std::size_t count = x.size() / C;
    for (std::size_t q = 0; q < x.size(); ++q) mean[q % C] += x.data()[q] / double(count);
    for (std::size_t q = 0; q < x.size(); ++q) biased[q % C] += std::pow(x.data()[q] - mean[q % C], 2) / double(count);
  }
};

TEST(BatchNorm, TrainingModeAgainstReference) {
  const auto x = placeholder<"x", double, shape<dyn, H, W, C>>();
  const auto g = placeholder<"g", double, shape<C>>();
  const auto b = placeholder<"b", double, shape<C>>();
  images xv({N, H, W, C}, 0.0);
  channels gv({C}, 0.0), bv({C}, 0.0);
  fill(xv, 1, -3, 5);
  fill(gv, 2, 0.5, 1.5);
  fill(bv, 3, -1, 1);
  const auto y = eval(batch_norm(x, g, b), x = xv, g = gv, b = bv);
  const reference r(xv);
  for (std::size_t q = 0; q < xv.size(); ++q) {
    const std::size_t c = q % C;
    const double want = (xv.data()[q] - r.mean[c]) / std::sqrt(r.biased[c] + 1e-5) * gv[c] + bv[c];
    EXPECT_NEAR(y.data()[q], want, 1e-12) << q;
  }
  // Named axes lower to a graph; the interpreter gives the same values.
  const auto named = batch_norm(x, g, b, 1e-3, axes<0, 1, 2>);
  const auto compiled = eval(named, x = xv, g = gv, b = bv);
  runtime_feeds feeds;
  feeds.insert_or_assign("x", runtime_tensor(xv));
  feeds.insert_or_assign("g", runtime_tensor(gv));
  feeds.insert_or_assign("b", runtime_tensor(bv));
  const auto interpreted = interpreter(to_graph(named)).run(feeds)[0];
  for (std::size_t q = 0; q < xv.size(); ++q) EXPECT_NEAR(interpreted.data<double>()[q], compiled.data()[q], 1e-12) << q;
}

TEST(BatchNorm, RowsInFloat) {
  const auto x = placeholder<"x", float, shape<dyn, 3>>();
  tensor<float, shape<dyn, 3>> xv({7, 3}, 0.f);
  for (std::size_t q = 0; q < xv.size(); ++q) xv.data()[q] = float(q % 5) * 0.75f - float(q % 3);
  const auto y = eval(batch_norm(x, 2.0f, 0.5f), x = xv);
  for (std::size_t c = 0; c < 3; ++c) {
    double m = 0, v = 0;
    for (std::size_t n = 0; n < 7; ++n) m += xv(n, c) / 7.0;
    for (std::size_t n = 0; n < 7; ++n) v += (xv(n, c) - m) * (xv(n, c) - m) / 7.0;
    for (std::size_t n = 0; n < 7; ++n) EXPECT_NEAR(y(n, c), (xv(n, c) - m) / std::sqrt(v + 1e-5) * 2 + 0.5, 1e-5) << n << ", " << c;
  }
}

TEST(BatchNorm, StatisticsAndInference) {
  const auto x = placeholder<"x", double, shape<dyn, H, W, C>>();
  images xv({N, H, W, C}, 0.0);
  fill(xv, 4, -2, 2);
  const auto [batch_mean, batch_variance] = batch_statistics(x);
  const auto m = eval(batch_mean, x = xv);
  const auto v = eval(batch_variance, x = xv);
  const reference r(xv);
  const double n = double(N * H * W);
  for (std::size_t c = 0; c < C; ++c) {
    EXPECT_NEAR(m[c], r.mean[c], 1e-12) << c;
    EXPECT_NEAR(v[c], r.biased[c] * n / (n - 1), 1e-12) << c;  // unbiased, as PyTorch's running_var
  }
  const auto rm = placeholder<"rm", double, shape<C>>();
  const auto rv = placeholder<"rv", double, shape<C>>();
  channels rmv({C}, 0.0), rvv({C}, 0.0);
  fill(rmv, 5, -1, 1);
  fill(rvv, 6, 0.5, 2);
  const auto y = eval(batch_norm_inference(x, rm, rv, 1.5, -0.25), x = xv, rm = rmv, rv = rvv);
  for (std::size_t q = 0; q < xv.size(); ++q) {
    const std::size_t c = q % C;
    EXPECT_NEAR(y.data()[q], (xv.data()[q] - rmv[c]) / std::sqrt(rvv[c] + 1e-5) * 1.5 - 0.25, 1e-12) << q;
  }
}

TEST(BatchNorm, GradientsAgainstCentralDifferences) {
  const auto x = placeholder<"x", double, shape<dyn, H, W, C>>();
  const auto g = placeholder<"g", double, shape<C>>();
  const auto b = placeholder<"b", double, shape<C>>();
  const auto w = placeholder<"w", double, shape<dyn, H, W, C>>();
  images xv({N, H, W, C}, 0.0), wv({N, H, W, C}, 0.0);
  channels gv({C}, 0.0), bv({C}, 0.0);
  fill(xv, 7, -2, 2);
  fill(wv, 8, -1, 1);
  fill(gv, 9, 0.5, 1.5);
  fill(bv, 10, -1, 1);
  const auto loss = sum(batch_norm(x, g, b) * w);
  const auto gx = eval(grad(loss, x), x = xv, g = gv, b = bv, w = wv);
  const auto gg = eval(grad(loss, g), x = xv, g = gv, b = bv, w = wv);
  const auto gb = eval(grad(loss, b), x = xv, g = gv, b = bv, w = wv);
  const double h = 1e-6;
  for (std::size_t q : {std::size_t(0), std::size_t(11), std::size_t(37), xv.size() - 1}) {
    auto up = xv, down = xv;
    up.data()[q] += h;
    down.data()[q] -= h;
    const double d = (eval(loss, x = up, g = gv, b = bv, w = wv)() - eval(loss, x = down, g = gv, b = bv, w = wv)()) / (2 * h);
    EXPECT_NEAR(gx.data()[q], d, 1e-6) << "x element " << q;
  }
  for (std::size_t c = 0; c < C; ++c) {
    auto up = gv, down = gv;
    up[c] += h;
    down[c] -= h;
    const double d = (eval(loss, x = xv, g = up, b = bv, w = wv)() - eval(loss, x = xv, g = down, b = bv, w = wv)()) / (2 * h);
    EXPECT_NEAR(gg[c], d, 1e-6) << "gamma " << c;
    double sum_w = 0;
    for (std::size_t q = c; q < wv.size(); q += C) sum_w += wv.data()[q];
    EXPECT_NEAR(gb[c], sum_w, 1e-12) << "beta " << c;
  }
}

}  // namespace
