// The gradient of a 3-layer MLP's softmax cross-entropy loss with respect to all six parameters,
// derived at compile time and evaluated in one call. Its compile time and compiler memory are
// tracked in docs/benchmarks.md (goal: <= 20 s and <= 2 GB on a 2-core machine).
#include <cmath>
#include <cstdio>
#include <random>
#include <symflow/symflow.hpp>

using namespace symflow;

int main() {
  auto x = placeholder<"x", float, shape<dyn, 64>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W1 = variable<"W1", float, shape<64, 32>>();
  auto b1 = variable<"b1", float, shape<32>>();
  auto W2 = variable<"W2", float, shape<32, 32>>();
  auto b2 = variable<"b2", float, shape<32>>();
  auto W3 = variable<"W3", float, shape<32, 10>>();
  auto b3 = variable<"b3", float, shape<10>>();

  auto h1 = scope("dense1", [&] { return relu(matmul(x, W1) + b1); });
  auto h2 = scope("dense2", [&] { return relu(matmul(h1, W2) + b2); });
  auto logits = scope("logits", [&] { return matmul(h2, W3) + b3; });
  auto loss = -mean(sum(log_softmax(logits) * one_hot<10>(y), axes<1>));
  auto [dW1, db1, dW2, db2, dW3, db3] = grad(loss, W1, b1, W2, b2, W3, b3);

  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  auto init = [&](auto& t, float scale) {
    for (auto& v : t) v = scale * normal(rng);
  };
  const std::size_t batch = 32;
  tensor<float, shape<dyn, 64>> xv(extents_t<2>{batch, 64}, 0.f);
  tensor<std::int32_t, shape<dyn>> yv(extents_t<1>{batch}, 0);
  init(xv, 1.f);
  for (std::size_t i = 0; i < batch; ++i) yv[i] = std::int32_t(rng() % 10);
  params p;
  tensor<float, shape<64, 32>> w1;
  tensor<float, shape<32, 32>> w2;
  tensor<float, shape<32, 10>> w3;
  init(w1, 0.18f);
  init(w2, 0.25f);
  init(w3, 0.25f);
  p.set("W1", w1);
  p.set("W2", w2);
  p.set("W3", w3);
  p.set("b1", tensor<float, shape<32>>{});
  p.set("b2", tensor<float, shape<32>>{});
  p.set("b3", tensor<float, shape<10>>{});

  const auto [L, g1, gb1, g2, gb2, g3, gb3] = eval(loss, dW1, db1, dW2, db2, dW3, db3, x = xv, y = yv, p);
  auto norm = [](const auto& t) {
    double s = 0;
    for (float v : t) s += double(v) * v;
    return std::sqrt(s);
  };
  std::printf("loss %.4f (log 10 = %.4f)\n", L[0], std::log(10.0));
  std::printf("|dW1| %.4f |db1| %.4f |dW2| %.4f |db2| %.4f |dW3| %.4f |db3| %.4f\n", norm(g1), norm(gb1),
              norm(g2), norm(gb2), norm(g3), norm(gb3));
  // The bias gradient of the last layer sums to zero: softmax minus one-hot sums to 0 per row.
  double s = 0;
  for (float v : gb3) s += v;
  std::printf("sum(db3) = %.2e\n", s);
  return std::abs(s) < 1e-5 && std::isfinite(L[0]) ? 0 : 1;
}
