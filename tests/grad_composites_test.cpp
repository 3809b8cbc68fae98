// Derivative rules of the composite softmax family (softmax, log_softmax, logsumexp, cross-entropy),
// checked against float64 central differences on random inputs.
#include "gradient_support.hpp"

using namespace symflow;
using namespace symflow::testing;


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
