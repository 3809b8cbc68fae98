// The classifier examples' command line (training_flags.hpp), parsed by CLI11 (Debian's
// libcli11-dev, header-only): compiled once here and linked by every example that reads it.
#include "training_flags.hpp"

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "command_line.hpp"

namespace symflow::examples {
namespace {
// The flags as CLI11 (Debian's libcli11-dev) reads them, bound to `f`; their defaults are f's values.
void describe_flags(CLI::App& app, training_flags& f) {
  app.description("Trains a classifier on Fashion-MNIST and reports its test accuracy (docs/training.md).");
  app.add_option("--epochs", f.epochs, "passes over the training set")->capture_default_str();
  app.add_option("--batch", f.batch, "examples per step (with --distributed: the global batch)")
      ->capture_default_str();
  app.add_option("--data", f.data, "the folder of the four Fashion-MNIST .gz files")->capture_default_str();
  app.add_option("--device", f.device, "cpu or cuda")->capture_default_str();
  app.add_option("--checkpoint", f.checkpoint, "saved after every epoch; resumed from when it exists")
      ->type_name("PATH");
  app.add_option("--limit", f.limit, "train and test on the first N examples of each split (quick runs)")
      ->type_name("N");
  app.add_option("--lr", f.learning_rate, "the learning rate (cosine decay over the run)")->capture_default_str();
  app.add_option("--optimizer", f.optimizer, "sgd, momentum or adam")->capture_default_str();
  app.add_option("--seed", f.seed, "initial weights and shuffling")->capture_default_str();
  app.add_option("--logdir", f.logdir,
                 "TensorBoard summaries: loss and accuracy every --log-every batches and per epoch, test "
                 "accuracy, parameter histograms, the model's graph")
      ->type_name("DIR");
  app.add_option("--log-every", f.log_every, "batches between batch-level summaries")->capture_default_str();
  app.add_option("--stop-after", f.stop_after,
                 "end the run after epoch N as if it were interrupted (the schedule still spans --epochs)")
      ->type_name("N");
  app.add_option("--export", f.export_dir,
                 "write the trained inference model there: model.json (the logits' graph), model.safetensors, "
                 "and the first test batch's images, labels and logits as .npy")
      ->type_name("DIR");
  app.add_option("--threads", f.threads, "OpenMP threads per process (0: OpenMP's default)")->capture_default_str();
  app.add_flag("--distributed", f.distributed,
               "join the ranks of `mpirun -np N` (docs/distributed.md): each rank trains on its share of a batch "
               "and the gradients are summed; rank 0 prints, logs, checkpoints and exports");
  app.footer(
      "Examples:\n"
      "  " + app.get_name() + " --epochs 2 --limit 2000\n"
      "  " + app.get_name() + " --checkpoint run/ckpt.safetensors --logdir run/logs\n"
      "  mpirun -np 2 " + app.get_name() + " --distributed --threads 1\n"
      "  symflow export DIR/model.json DIR/model.onnx --params DIR/model.safetensors   (after --export DIR)\n");
}
}  // namespace

// The help text, with `defaults` shown as the defaults.
std::string usage(std::string_view program, const training_flags& defaults) {
  training_flags f = defaults;
  CLI::App app{"", std::string(program)};
  describe_flags(app, f);
  return app.help();
}

// The flags of argv over `flags`' values; usage_error with an empty message for --help, with the
// reason for anything CLI11 or the checks below refuse.
training_flags parse_flags(int argc, char** argv, training_flags flags) {
  CLI::App app{"", argc > 0 ? argv[0] : "example"};
  describe_flags(app, flags);
  if (!parse_command_line<usage_error>(app, argc, argv)) throw usage_error("");
  if (flags.batch == 0) throw usage_error("--batch must be at least 1");
  if (flags.limit == 0) throw usage_error("--limit must be at least 1");
  if (flags.log_every == 0) throw usage_error("--log-every must be at least 1");
  if (!(flags.learning_rate > 0)) throw usage_error("--lr needs a positive number, got " + std::to_string(flags.learning_rate));
  if (flags.device != "cpu" && flags.device != "cuda") throw usage_error("--device is cpu or cuda, got '" + flags.device + "'");
  if (flags.optimizer != "sgd" && flags.optimizer != "momentum" && flags.optimizer != "adam")
    throw usage_error("--optimizer is sgd, momentum or adam, got '" + flags.optimizer + "'");
  return flags;
}

}  // namespace symflow::examples
