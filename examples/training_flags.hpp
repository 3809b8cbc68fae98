#pragma once
// The command line of the Fashion-MNIST classifier examples (classifier_training.hpp): the flags,
// their defaults, the help text and the parser, which refuses what it does not understand. The
// parser is CLI11, compiled once in training_flags.cpp (the library symflow_example_flags): in
// each example's unit its functions were as much machine code as the model's.
#include <cstdint>
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

// The help text, with `defaults` shown as the defaults.
std::string usage(std::string_view program, const training_flags& defaults);

// The flags of argv over `flags`' values; usage_error with an empty message for --help, with the
// reason for anything CLI11 or the checks refuse.
training_flags parse_flags(int argc, char** argv, training_flags flags);

}  // namespace symflow::examples
