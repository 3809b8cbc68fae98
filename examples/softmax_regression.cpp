// Softmax regression on Fashion-MNIST: one affine map from 784 standardised pixels to 10 logits,
// trained on the cross-entropy loss. The linear baseline the MLP is measured against.
//
//   softmax_regression [--epochs N] [--batch N] [--data DIR] [--checkpoint PATH] [--logdir DIR] [--limit N] ...
//
// The last line printed is test_accuracy=0.XXXX.
#include "classifier_training.hpp"

using namespace symflow;

int main(int argc, char** argv) {
  auto x = placeholder<"x", float, shape<dyn, 784>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W = variable<"W", float, shape<784, 10>>();
  auto b = variable<"b", float, shape<10>>();
  auto logits = matmul(x, W) + b;

  const auto model = examples::make_classifier("softmax-regression-784-10", x, y, logits, std::tuple{W, b},
                                               [&](params& p, std::mt19937_64& engine) {
                                                 initialize(p, W, glorot_uniform{}, engine);
                                                 initialize(p, b, zeros, engine);
                                               });
  examples::training_flags defaults;
  defaults.epochs = 10;
  return examples::main_of(argc, argv, model, defaults);
}
