// The seed's convolutional network on Fashion-MNIST (NHWC):
//   28x28x1 -> conv 5x5, 32 filters, ReLU -> 2x2 max-pool -> conv 5x5, 64 filters, ReLU -> 2x2 max-pool
//   -> flatten 3136 -> dense 1024, ReLU, dropout -> dense 10 logits,
// trained with Adam on the softmax cross-entropy. Dropout is in the training model only; the test
// accuracy is measured on the same weights without it.
//
//   cnn [--epochs N] [--batch N] [--data DIR] [--checkpoint PATH] [--logdir DIR] [--limit N] [--lr RATE] ...
//
// The last line printed is test_accuracy=0.XXXX.
#include "classifier_training.hpp"

using namespace symflow;

int main(int argc, char** argv) {
  auto x = placeholder<"x", float, shape<dyn, 784>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W1 = variable<"conv1/W", float, shape<5, 5, 1, 32>>();
  auto b1 = variable<"conv1/b", float, shape<32>>();
  auto W2 = variable<"conv2/W", float, shape<5, 5, 32, 64>>();
  auto b2 = variable<"conv2/b", float, shape<64>>();
  auto W3 = variable<"dense/W", float, shape<3136, 1024>>();
  auto b3 = variable<"dense/b", float, shape<1024>>();
  auto W4 = variable<"logits/W", float, shape<1024, 10>>();
  auto b4 = variable<"logits/b", float, shape<10>>();
  constexpr double dropout_rate = 0.5;

  const auto features = [&] {
    const auto images = reshape<shape<dyn, 28, 28, 1>>(x);
    const auto conv1 = scope("conv1", [&] { return max_pool2d<2>(relu(conv2d<1, padding::same>(images, W1) + b1)); });
    const auto conv2 = scope("conv2", [&] { return max_pool2d<2>(relu(conv2d<1, padding::same>(conv1, W2) + b2)); });
    return scope("dense", [&] { return relu(matmul(flatten(conv2), W3) + b3); });  // [N, 1024]
  }();
  const auto logits = scope("logits", [&] { return matmul(features, W4) + b4; });
  const auto training_logits = [=](std::uint64_t step_seed) {
    return scope("logits", [&] { return matmul(dropout(features, dropout_rate, step_seed), W4) + b4; });
  };

  const auto model = examples::make_classifier("cnn-fashion-mnist", x, y, logits, training_logits,
                                               std::tuple{W1, b1, W2, b2, W3, b3, W4, b4},
                                               [&](params& p, std::mt19937_64& engine) {
                                                 initialize(p, W1, he_normal{}, engine);
                                                 initialize(p, b1, zeros, engine);
                                                 initialize(p, W2, he_normal{}, engine);
                                                 initialize(p, b2, zeros, engine);
                                                 initialize(p, W3, he_normal{}, engine);
                                                 initialize(p, b3, zeros, engine);
                                                 initialize(p, W4, glorot_uniform{}, engine);
                                                 initialize(p, b4, zeros, engine);
                                               });
  examples::training_flags defaults;
  defaults.epochs = 5;
  defaults.batch = 64;
  return examples::main_of(argc, argv, model, defaults);
}
