// Derivative rules of reductions and of matmul (2-D with bias and activation, batched), checked
// against float64 central differences on random inputs. (Views and concat: grad_views_test; the
// softmax family: grad_composites_test; values used several times: grad_shared_test.)
#include "gradient_support.hpp"

using namespace symflow;
using namespace symflow::testing;

TEST(GradReductions, SumMeanMaxMinOverAxes) {
  auto x = placeholder<"x", float, shape<dyn, 3, 4>>();
  auto c3 = placeholder<"c3", float, shape<dyn, 4>>();
  const auto xv = random_tensor<float, shape<dyn, 3, 4>>({2, 3, 4}, -2, 2, 1);  // distinct values: no ties
  const auto cv = random_tensor<float, shape<dyn, 4>>({2, 4}, -1, 1, 2);
  auto check = [&](auto loss) { expect_gradient_matches(check_gradient(loss, x, x = xv, c3 = cv)); };
  check(sum(sum(x, axes<1>) * c3));
  check(sum(mean(x, axes<1>) * c3));
  check(sum(max(x, axes<1>) * c3));
  check(sum(min(x, axes<-2>) * c3));
  check(sum(exp(sum(x, axes<1>, keepdims)) * x));
  check(mean(x * x));
  check(max(x) + min(x) * 2.0f);
  check(sum(mean(x, axes<0, 2>) * sum(x, axes<0, 2>)));
}

TEST(GradKernels, Matmul2DAndBiasActivation) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto W = variable<"W", float, shape<3, 5>>();
  auto b = variable<"b", float, shape<5>>();
  const auto xv = random_tensor<float, shape<dyn, 3>>({4, 3}, -1, 1, 3);
  const auto Wv = random_tensor<float, shape<3, 5>>({3, 5}, -1, 1, 4);
  const auto bv = random_tensor<float, shape<5>>({5}, -1, 1, 5);
  auto loss = sum(tanh(matmul(x, W) + b) * tanh(matmul(x, W) + b));
  expect_gradient_matches(check_gradient(loss, W, x = xv, W = Wv, b = bv));
  expect_gradient_matches(check_gradient(loss, b, x = xv, W = Wv, b = bv));
  expect_gradient_matches(check_gradient(loss, x, x = xv, W = Wv, b = bv));
}

TEST(GradKernels, BatchedMatmul) {
  auto a = placeholder<"a", float, shape<2, 3, 4>>();
  auto b3 = placeholder<"b3", float, shape<2, 4, 5>>();
  auto b2 = placeholder<"b2", float, shape<4, 5>>();
  const auto av = random_tensor<float, shape<2, 3, 4>>({2, 3, 4}, -1, 1, 6);
  const auto b3v = random_tensor<float, shape<2, 4, 5>>({2, 4, 5}, -1, 1, 7);
  const auto b2v = random_tensor<float, shape<4, 5>>({4, 5}, -1, 1, 8);
  auto l3 = sum(sin(matmul(a, b3)));
  auto l2 = sum(sin(matmul(a, b2)));
  expect_gradient_matches(check_gradient(l3, a, a = av, b3 = b3v, b2 = b2v));
  expect_gradient_matches(check_gradient(l3, b3, a = av, b3 = b3v, b2 = b2v));
  expect_gradient_matches(check_gradient(l2, a, a = av, b3 = b3v, b2 = b2v));
  expect_gradient_matches(check_gradient(l2, b2, a = av, b3 = b3v, b2 = b2v));
}
