// Gradients of expressions that use a value several times: one adjoint per value, differentiated
// through once (counted GEMMs), and equal to float64 central differences at several depths.
#include "gradient_support.hpp"

using namespace symflow;
using namespace symflow::testing;


// --- Subexpressions used more than once: one adjoint, differentiated through once ---

namespace {
// Distinct matmul node types in an expression: each is a GEMM the evaluator runs (copies of one
// type and value are evaluated once).
template <class E>
constexpr std::size_t distinct_matmuls() {
  return []<class... N>(symflow::detail::type_list<N...>) {
    return (std::size_t(0) + ... + std::size_t(N::op_name == std::string_view("matmul")));
  }(typename symflow::detail::post_order<symflow::detail::type_list<>, E>::type{});
}
}  // namespace

TEST(GradSharedSubexpressions, MlpCrossEntropyBackpropagatesThroughEachMatmulOnce) {
  auto x = placeholder<"x", float, shape<dyn, 6>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W1 = variable<"W1", float, shape<6, 5>>();
  auto b1 = variable<"b1", float, shape<5>>();
  auto W2 = variable<"W2", float, shape<5, 4>>();
  auto b2 = variable<"b2", float, shape<4>>();
  // log_softmax reaches the logits four times (x - max(x), twice).
  const auto logits = matmul(relu(matmul(x, W1) + b1), W2) + b2;
  const auto loss = -mean(sum(log_softmax(logits) * one_hot<4>(y), axes<1>));
  const auto [gW1, gb1, gW2, gb2] = grad(loss, W1, b1, W2, b2);
  // forward: x W1, h W2; backward: h^T g (for W2), g W2^T (for h), x^T dh (for W1)
  static_assert(distinct_matmuls<decltype(gW2)>() == 1 + 2);  // the logits' two, hᵀ·g
  static_assert(distinct_matmuls<decltype(gW1)>() == 2 + 2);  // x W1, h W2, g W2ᵀ, xᵀ·dh
  (void)gb1, (void)gb2;

  const auto xv = random_tensor<float, shape<dyn, 6>>({7, 6}, -1, 1, 40);
  tensor<std::int32_t, shape<dyn>> yv({7}, 0);
  for (std::size_t i = 0; i < 7; ++i) yv[i] = std::int32_t((i * 5) % 4);
  const auto W1v = random_tensor<float, shape<6, 5>>({6, 5}, -1, 1, 41);
  const auto b1v = random_tensor<float, shape<5>>({5}, -0.5, 0.5, 42);
  const auto W2v = random_tensor<float, shape<5, 4>>({5, 4}, -1, 1, 43);
  const auto b2v = random_tensor<float, shape<4>>({4}, -0.5, 0.5, 44);
  auto check = [&](const auto& leaf) {
    expect_gradient_matches(check_gradient(loss, leaf, x = xv, y = yv, W1 = W1v, b1 = b1v, W2 = W2v, b2 = b2v));
  };
  check(W1), check(b1), check(W2), check(b2);
}

TEST(GradSharedSubexpressions, ReusedValuesAtSeveralDepthsMatchFiniteDifferences) {
  auto a = placeholder<"a", float, shape<4, 3>>();
  auto w = variable<"w", float, shape<3>>();
  const auto h = tanh(a * w);             // used four times, at two depths
  const auto k = h * h + sin(h);          // used twice
  const auto loss = sum(k * exp(-k) + h * k);
  const auto av = random_tensor<float, shape<4, 3>>({4, 3}, -1, 1, 45);
  const auto wv = random_tensor<float, shape<3>>({3}, -1, 1, 46);
  expect_gradient_matches(check_gradient(loss, w, a = av, w = wv));
  expect_gradient_matches(check_gradient(loss, a, a = av, w = wv));

  // Occurrences that may differ in value (literals here) are not merged, and still differentiate.
  const auto scaled = sum(2.0f * h + 3.0f * h * h);
  expect_gradient_matches(check_gradient(scaled, w, a = av, w = wv));
}
