// Runtime differentiation of every elementwise rule with broadcasting, against the compile-time
// gradient of the same expression.
#include "runtime_grad_support.hpp"

TEST(RuntimeGrad, ElementwiseRulesAndBroadcastingMatchCompileTimeGradient) {
  auto a = placeholder<"a", double, shape<4, 3>>();
  auto b = placeholder<"b", double, shape<3>>();
  auto c = placeholder<"c", double, shape<4, 1>>();
  auto ta = random_tensor<double, shape<4, 3>>({}, 5, 0.2, 1.5);
  auto tb = random_tensor<double, shape<3>>({}, 6, 0.2, 1.5);
  auto tc = random_tensor<double, shape<4, 1>>({}, 7, -1, 1);
  runtime_feeds rf;
  rf["a"] = runtime_tensor(ta);
  rf["b"] = runtime_tensor(tb);
  rf["c"] = runtime_tensor(tc);
  const params none;
  auto loss = sum(exp(a) * b + log(a) / b - sin(c) * cos(a) + tanh(a * c) + sigmoid(b - c) + sqrt(a) * rsqrt(b) +
                  square(c) * abs(a - 0.7) + softplus(c) * log1p(a) + pow(a, b) + maximum(a, c) - minimum(b, c) +
                  where(a > b, a * c, -b) + relu(c - 0.1) * a);
  expect_runtime_grad_matches(loss, std::tuple{a, b, c}, rf, none, 1e-12, a = ta, b = tb, c = tc);
}
