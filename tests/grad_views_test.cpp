// Derivative rules of views (transpose, permute, reshape, flatten, slice) and concat, checked
// against float64 central differences on random inputs.
#include "gradient_support.hpp"

using namespace symflow;
using namespace symflow::testing;


TEST(GradViews, TransposePermuteReshapeFlattenSlice) {
  auto x = placeholder<"x", float, shape<4, 3>>();
  auto y = placeholder<"y", float, shape<2, 3, 4>>();
  const auto xv = random_tensor<float, shape<4, 3>>({4, 3}, -1, 1, 9);
  const auto yv = random_tensor<float, shape<2, 3, 4>>({2, 3, 4}, -1, 1, 10);
  const auto w43 = constant(random_tensor<float, shape<3, 4>>({3, 4}, -1, 1, 11));
  const auto w6 = constant(random_tensor<float, shape<6, 2>>({6, 2}, -1, 1, 12));
  auto cx = [&](auto loss) { expect_gradient_matches(check_gradient(loss, x, x = xv, y = yv)); };
  auto cy = [&](auto loss) { expect_gradient_matches(check_gradient(loss, y, x = xv, y = yv)); };
  cx(sum(transpose(x) * w43));
  cx(sum(exp(reshape<shape<6, 2>>(x)) * w6));
  cx(sum(slice(x, 1, 3) * slice(x, 2, 4)));
  cx(sum(narrow<1>(x, 1, 3) * narrow<1>(x, 0, 2) * 3.0f));
  cy(sum(square(permute<2, 0, 1>(y)) * permute<2, 0, 1>(y)));
  cy(sum(flatten(y) * flatten(y)));
  cy(sum(matmul(transpose(y), y)));
}

TEST(GradKernels, Concat) {
  auto a = placeholder<"a", float, shape<2, 3>>();
  auto b = placeholder<"b", float, shape<2, 2>>();
  const auto av = random_tensor<float, shape<2, 3>>({2, 3}, -1, 1, 13);
  const auto bv = random_tensor<float, shape<2, 2>>({2, 2}, -1, 1, 14);
  const auto w = constant(random_tensor<float, shape<2, 5>>({2, 5}, -1, 1, 15));
  auto loss = sum(sin(concat<1>(a, b)) * w);
  expect_gradient_matches(check_gradient(loss, a, a = av, b = bv));
  expect_gradient_matches(check_gradient(loss, b, a = av, b = bv));
  auto loss0 = sum(exp(concat<0>(b, b * 2.0f)));
  expect_gradient_matches(check_gradient(loss0, b, a = av, b = bv));
}
