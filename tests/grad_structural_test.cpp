// Derivative rules of reductions, views and kernels (matmul, concat, one_hot), and of the
// composite softmax family, checked against float64 central differences on random inputs.
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

TEST(GradComposites, SoftmaxFamilyAndCrossEntropy) {
  auto z = placeholder<"z", float, shape<dyn, 5>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  const auto zv = random_tensor<float, shape<dyn, 5>>({3, 5}, -3, 3, 16);
  const tensor<std::int32_t, shape<dyn>> yv{4, 0, 2};
  const auto w = constant(random_tensor<float, shape<3, 5>>({3, 5}, -1, 1, 17));
  auto cz = [&](auto loss) { expect_gradient_matches(check_gradient(loss, z, z = zv, y = yv)); };
  cz(sum(softmax(z) * w));
  cz(sum(log_softmax(z) * w));
  cz(sum(logsumexp(z) * logsumexp(z)));
  cz(-mean(sum(log_softmax(z) * one_hot<5>(y), axes<1>)));
  // the gradient of mean cross-entropy is (softmax - one_hot) / batch, exactly
  const auto g = eval(grad(-mean(sum(log_softmax(z) * one_hot<5>(y), axes<1>)), z), z = zv, y = yv);
  const auto p = eval(softmax(z), z = zv);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 5; ++j)
      EXPECT_NEAR(g(i, j), (p(i, j) - (std::size_t(yv[i]) == j ? 1.f : 0.f)) / 3.f, 1e-6);
}

TEST(GradApi, SoftmaxRegressionGradientsWithDynBatch) {
  auto x = placeholder<"x", float, shape<dyn, 6>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W = variable<"W", float, shape<6, 4>>();
  auto b = variable<"b", float, shape<4>>();
  auto loss = -mean(sum(log_softmax(matmul(x, W) + b) * one_hot<4>(y), axes<1>));
  for (std::size_t batch : {1u, 7u}) {
    const auto xv = random_tensor<float, shape<dyn, 6>>({batch, 6}, -1, 1, 18 + unsigned(batch));
    tensor<std::int32_t, shape<dyn>> yv({batch}, 0);
    for (std::size_t i = 0; i < batch; ++i) yv[i] = std::int32_t((i * 3) % 4);
    const auto Wv = random_tensor<float, shape<6, 4>>({6, 4}, -1, 1, 19);
    const auto bv = random_tensor<float, shape<4>>({4}, -1, 1, 20);
    expect_gradient_matches(check_gradient(loss, W, x = xv, y = yv, W = Wv, b = bv));
    expect_gradient_matches(check_gradient(loss, b, x = xv, y = yv, W = Wv, b = bv));
  }
}

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
