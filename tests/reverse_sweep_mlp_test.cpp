// grad_sweep on a layer-norm MLP (shared subexpressions at every layer) against float64 central
// differences.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <symflow/symflow.hpp>
#include <symflow/symbolic/reverse_sweep.hpp>

using namespace symflow;

namespace {

template <class S>
tensor<double, S> random_values(const extents_t<S::rank>& extents, unsigned seed) {
  tensor<double, S> t(extents, uninitialized);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (auto& v : t) v = dist(rng);
  return t;
}

// Central differences of loss(leaf) in float64, element by element.
template <class Loss, class Evaluate, class Tensor>
std::vector<double> finite_differences(const Loss& loss, Tensor& value, Evaluate&& evaluate) {
  std::vector<double> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const double original = value.data()[i];
    const double h = 1e-6 * std::max(1.0, std::abs(original));
    value.data()[i] = original + h;
    const double up = evaluate(loss)[0];
    value.data()[i] = original - h;
    const double down = evaluate(loss)[0];
    value.data()[i] = original;
    out.push_back((up - down) / (2 * h));
  }
  return out;
}

template <class Tensor>
void expect_close(const Tensor& symbolic, const std::vector<double>& numeric, double tolerance = 1e-7) {
  ASSERT_EQ(symbolic.size(), numeric.size());
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    const double scale = std::max({1.0, std::abs(symbolic.data()[i]), std::abs(numeric[i])});
    EXPECT_LT(std::abs(symbolic.data()[i] - numeric[i]) / scale, tolerance)
        << "element " << i << ": symbolic " << symbolic.data()[i] << ", numeric " << numeric[i];
  }
}

template <int Depth, class H>
auto chain(const H& h) {
  if constexpr (Depth == 0) {
    return h;
  } else {
    auto next = tanh(h) * h + h;  // h used three times per level
    return chain<Depth - 1>(next);
  }
}

}  // namespace


TEST(ReverseSweep, LayerNormMlpMatchesFiniteDifferences) {
  auto x = placeholder<"x", double, shape<dyn, 5>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W = variable<"W", double, shape<5, 4>>();
  auto b = variable<"b", double, shape<4>>();
  auto V = variable<"V", double, shape<4, 3>>();
  auto z = matmul(x, W) + b;
  auto mu = mean(z, axes<-1>, keepdims);
  auto c = z - mu;
  auto var = mean(c * c, axes<-1>, keepdims);
  auto n = c * rsqrt(var + 1e-5);
  auto h = 0.5 * n * (1.0 + tanh(0.7978845608 * (n + 0.044715 * n * n * n)));
  auto loss = mean(softmax_cross_entropy(matmul(h, V), y));
  auto xv = random_values<shape<dyn, 5>>({3, 5}, 5);
  tensor<std::int32_t, shape<dyn>> yv({3}, 0);
  yv[0] = 2;
  yv[1] = 0;
  yv[2] = 1;
  auto Wv = random_values<shape<5, 4>>({5, 4}, 6);
  auto bv = random_values<shape<4>>({4}, 7);
  auto Vv = random_values<shape<4, 3>>({4, 3}, 8);
  const auto [gW, gb, gV] = grad_sweep(loss, W, b, V);
  auto run = [&](const auto& e) { return eval(e, x = xv, y = yv, W = Wv, b = bv, V = Vv); };
  expect_close(run(gW), finite_differences(loss, Wv, run));
  expect_close(run(gb), finite_differences(loss, bv, run));
  expect_close(run(gV), finite_differences(loss, Vv, run));
}
