#pragma once
// The command line of the Fashion-MNIST classifier examples (classifier_training.hpp): the flags,
// their defaults, the usage text and the parser, which refuses what it does not understand.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <symflow/core/error.hpp>
#include <symflow/data/mnist.hpp>

namespace symflow::examples {

// ctest's SKIP_RETURN_CODE: the data set is not installed.
inline constexpr int exit_no_dataset = 77;
inline constexpr int exit_usage = 2;

struct training_flags {
  std::size_t epochs = 5;
  std::size_t batch = 128;
  std::string data = std::string(fashion_mnist_directory);
  std::string device = "cpu";
  std::string checkpoint;
  std::string logdir;               // TensorBoard summaries; none when empty
  std::string export_dir;           // the trained inference model as a graph value; none when empty
  std::size_t log_every = 50;       // batches between batch-level scalars
  std::size_t limit = all_examples;
  std::size_t stop_after = 0;       // stop after this epoch, as if interrupted (0: run all --epochs)
  double learning_rate = 1e-3;
  std::string optimizer = "adam";
  std::uint64_t seed = 42;
  bool distributed = false;         // one rank of an mpirun job
  std::size_t threads = 0;          // OpenMP threads per process (0: OpenMP's default)
};

class usage_error : public error {
 public:
  using error::error;
};

inline std::string usage(std::string_view program, const training_flags& d) {
  return "usage: " + std::string(program) +
         " [--epochs N] [--batch N] [--data DIR] [--device cpu|cuda] [--checkpoint PATH] [--limit N]\n"
         "       [--lr RATE] [--optimizer sgd|momentum|adam] [--seed N] [--logdir DIR] [--log-every N] [--stop-after N]\n"
         "       [--export DIR] [--threads N] [--distributed]\n"
         "defaults: --epochs " + std::to_string(d.epochs) + " --batch " + std::to_string(d.batch) + " --data " + d.data +
         " --lr " + std::to_string(d.learning_rate) + " --optimizer " + d.optimizer + " --seed " + std::to_string(d.seed) +
         "\n--checkpoint PATH saves after every epoch and resumes from PATH when it exists;\n"
         "--limit N trains and tests on the first N examples of each split (quick runs);\n"
         "--stop-after N ends the run after epoch N as if it were interrupted (the schedule still spans --epochs);\n"
         "--logdir DIR writes TensorBoard summaries there: loss and accuracy every --log-every batches\n"
         "(default " + std::to_string(d.log_every) + ") and per epoch, test accuracy, parameter histograms, the model's graph;\n"
         "--export DIR writes the trained inference model there: model.json (the logits' graph), model.safetensors\n"
         "(its parameters), and test_images.npy, test_labels.npy, test_logits.npy (the first test batch, standardised,\n"
         "and the typed model's logits for it); `symflow export DIR/model.json DIR/model.onnx --params\n"
         "DIR/model.safetensors` makes an ONNX model of it (docs/onnx.md);\n"
         "--distributed joins the ranks of `mpirun -np N` (docs/distributed.md): --batch is the global batch, each\n"
         "rank trains on its share and the gradients are summed; rank 0 prints, logs, checkpoints and exports.\n";
}

inline training_flags parse_flags(int argc, char** argv, training_flags flags) {
  auto number = [](std::string_view flag, const char* text) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-') throw usage_error(std::string(flag) + " needs a non-negative integer, got '" + text + "'");
    return std::size_t(v);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") throw usage_error("");
    if (flag == "--distributed") {
      flags.distributed = true;
      continue;
    }
    if (i + 1 >= argc) throw usage_error("unknown flag or missing value: " + std::string(flag));
    const char* value = argv[++i];
    if (flag == "--epochs") flags.epochs = number(flag, value);
    else if (flag == "--batch") flags.batch = number(flag, value);
    else if (flag == "--data") flags.data = value;
    else if (flag == "--device") flags.device = value;
    else if (flag == "--checkpoint") flags.checkpoint = value;
    else if (flag == "--logdir") flags.logdir = value;
    else if (flag == "--export") flags.export_dir = value;
    else if (flag == "--log-every") flags.log_every = number(flag, value);
    else if (flag == "--limit") flags.limit = number(flag, value);
    else if (flag == "--seed") flags.seed = number(flag, value);
    else if (flag == "--threads") flags.threads = number(flag, value);
    else if (flag == "--stop-after") flags.stop_after = number(flag, value);
    else if (flag == "--optimizer") flags.optimizer = value;
    else if (flag == "--lr") {
      char* end = nullptr;
      flags.learning_rate = std::strtod(value, &end);
      if (end == value || *end || !(flags.learning_rate > 0)) throw usage_error(std::string("--lr needs a positive number, got '") + value + "'");
    } else {
      throw usage_error("unknown flag: " + std::string(flag));
    }
  }
  if (flags.batch == 0) throw usage_error("--batch must be at least 1");
  if (flags.limit == 0) throw usage_error("--limit must be at least 1");
  if (flags.log_every == 0) throw usage_error("--log-every must be at least 1");
  if (flags.device != "cpu" && flags.device != "cuda") throw usage_error("--device is cpu or cuda, got '" + flags.device + "'");
  if (flags.optimizer != "sgd" && flags.optimizer != "momentum" && flags.optimizer != "adam")
    throw usage_error("--optimizer is sgd, momentum or adam, got '" + flags.optimizer + "'");
  return flags;
}

}  // namespace symflow::examples
