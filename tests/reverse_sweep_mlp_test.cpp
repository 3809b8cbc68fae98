// grad_sweep on a layer-norm MLP (shared subexpressions at every layer) against float64 central
// differences.
#include "reverse_sweep_support.hpp"

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
