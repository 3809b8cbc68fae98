// Gradients of max/avg pooling and softmax cross-entropy against float64 central differences on
// random inputs. (conv2d: cnn_conv_gradients_test.)
#include "cnn_support.hpp"

TEST(CnnGradients, Pooling) {
  const auto x = placeholder<"x", float, any4>();
  const auto xv = random_tensor<float, any4>({2, 6, 5, 3}, -1, 1, 320);  // distinct values: no ties
  const auto c = constant(random_tensor<float, shape<2, 3, 2, 3>>({2, 3, 2, 3}, -1, 1, 321));
  expect_gradient_matches(check_gradient(sum(max_pool2d<2>(x) * c), x, x = xv));
  expect_gradient_matches(check_gradient(sum(square(max_pool2d<3, 1>(x))), x, x = xv));
  expect_gradient_matches(check_gradient(sum(avg_pool2d<2>(x) * c), x, x = xv));
  expect_gradient_matches(check_gradient(sum(sin(avg_pool2d<3, 2>(x))), x, x = xv));
  const auto g = placeholder<"g", float, any4>();
  const auto gv = random_tensor<float, any4>({2, 3, 2, 3}, -1, 1, 322);
  expect_gradient_matches(check_gradient(sum(sin(avg_pool2d_backward<2>(g, x))), g, g = gv, x = xv));
}

TEST(CnnGradients, SoftmaxCrossEntropy) {
  const auto logits = placeholder<"logits", float, shape<dyn, 5>>();
  const auto labels = placeholder<"labels", std::int32_t, shape<dyn>>();
  const auto lv = random_tensor<float, shape<dyn, 5>>({4, 5}, -3, 3, 330);
  const tensor<std::int32_t, shape<dyn>> yv{3, 0, -1, 4};  // -1: a padding example
  const auto c = constant(tensor<float, shape<4>>{0.5f, -1.0f, 2.0f, 1.5f});
  const auto loss = softmax_cross_entropy(logits, labels);
  expect_gradient_matches(check_gradient(sum(loss * c), logits, logits = lv, labels = yv));
  // Second order through the backward kernel (its rule built from softmax and one_hot).
  const auto g = placeholder<"g", float, shape<dyn>>();
  const auto gv = random_tensor<float, shape<dyn>>({4}, -1, 1, 331);
  const auto backward = sum(sin(softmax_cross_entropy_backward(g, logits, labels)));
  expect_gradient_matches(check_gradient(backward, logits, logits = lv, labels = yv, g = gv));
  expect_gradient_matches(check_gradient(backward, g, logits = lv, labels = yv, g = gv));
}
