// A multilayer perceptron on Fashion-MNIST: 784 standardised pixels -> 256 ReLU units -> 10 logits,
// trained with Adam on the cross-entropy loss.
//
//   mlp [--epochs N] [--batch N] [--data DIR] [--checkpoint PATH] [--logdir DIR] [--limit N] [--lr RATE] ...
//
// The last line printed is test_accuracy=0.XXXX.
#include "classifier_training.hpp"

using namespace symflow;

int main(int argc, char** argv) {
  auto x = placeholder<"x", float, shape<dyn, 784>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W1 = variable<"W1", float, shape<784, 256>>();
  auto b1 = variable<"b1", float, shape<256>>();
  auto W2 = variable<"W2", float, shape<256, 10>>();
  auto b2 = variable<"b2", float, shape<10>>();
  auto hidden = scope("hidden", [&] { return relu(matmul(x, W1) + b1); });
  auto logits = scope("logits", [&] { return matmul(hidden, W2) + b2; });

  const auto model = examples::make_classifier("mlp-784-256-10", x, y, logits, std::tuple{W1, b1, W2, b2},
                                               [&](params& p, std::mt19937_64& engine) {
                                                 initialize(p, W1, he_normal{}, engine);
                                                 initialize(p, b1, zeros, engine);
                                                 initialize(p, W2, glorot_uniform{}, engine);
                                                 initialize(p, b2, zeros, engine);
                                               });
  examples::training_flags defaults;
  defaults.epochs = 10;
  return examples::main_of(argc, argv, model, defaults);
}
