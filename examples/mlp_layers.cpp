// The Fashion-MNIST MLP (784 -> 256 ReLU -> 10) written with layer objects and nn::trainer: the
// whole program, data to test accuracy. Usage: mlp_layers [EPOCHS] [EXAMPLES]   (defaults: 10, all)
#include <cstdio>
#include <cstdlib>

#include <symflow/data/mnist.hpp>
#include <symflow/data/normalize.hpp>
#include <symflow/nn/all.hpp>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>

using namespace symflow;

int main(int argc, char** argv) {
  const std::size_t epochs = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10, batch = 128;
  const std::size_t limit = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : all_examples;
  image_dataset data = fashion_mnist(std::string(fashion_mnist_directory), {.train_limit = limit, .test_limit = limit});
  const standardization pixels = statistics_of(data.train.images);
  standardize(data.train.images, pixels);
  standardize(data.test.images, pixels);

  auto x = placeholder<"x", float, shape<dyn, 784>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  nn::dense<"hidden", 784, 256> hidden({.weights = he_normal{}});
  nn::dense<"logits", 256, 10> output;
  auto logits = output(relu(hidden(x)));

  const std::size_t steps = epochs * batch_plan(data.train.size(), batch).batch_count();
  nn::trainer train(mean(softmax_cross_entropy(logits, y)), nn::parameters(hidden, output),
                    adam({.learning_rate = cosine_decay(1e-3, steps)}));
  image_batch b;
  tensor<float, shape<dyn, 10>> batch_logits;
  for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
    const batch_plan plan(data.train.size(), batch, epoch_seed(42, epoch));
    epoch_progress progress("epoch " + std::to_string(epoch + 1), plan.batch_count());
    running_mean loss;
    accuracy_counter correct;
    for (std::size_t i = 0; i < plan.batch_count(); ++i) {
      load_batch(data.train, plan, i, b);
      loss.add(train.step_into(std::tie(batch_logits), logits, x = b.images, y = b.labels), double(b.labels.size()));
      correct.add(batch_logits, b.labels);
      progress.update(i + 1, correct.seen(), loss.mean(), correct.accuracy());
    }
    progress.finish();
  }
  std::printf("test_accuracy=%.4f\n", accuracy(eval(logits, x = data.test.images, train.model()), data.test.labels));
}
