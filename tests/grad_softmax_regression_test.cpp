// A softmax regression's gradients with a dynamic batch, checked against float64 central
// differences on random inputs.
#include "gradient_support.hpp"

using namespace symflow;
using namespace symflow::testing;



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
