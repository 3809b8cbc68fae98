#pragma once
// What the Fashion-MNIST classifier examples share: their command line, loading and standardising
// the data, the training loop (progress bar per epoch, optimiser step, checkpoint after each
// epoch and resuming from it, TensorBoard summaries with --logdir) and the test accuracy they end with. Each example supplies only its
// model: placeholders, variables, initial values and the logits expression.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>

#include <symflow/data/mnist.hpp>
#include <symflow/data/normalize.hpp>
#include <symflow/debug/tensorboard.hpp>
#include <symflow/io/json.hpp>
#include <symflow/io/npy.hpp>
#include <symflow/ir/to_graph.hpp>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>
#include <symflow/train/checkpoint.hpp>

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
};

class usage_error : public error {
 public:
  using error::error;
};

inline std::string usage(std::string_view program, const training_flags& d) {
  return "usage: " + std::string(program) +
         " [--epochs N] [--batch N] [--data DIR] [--device cpu|cuda] [--checkpoint PATH] [--limit N]\n"
         "       [--lr RATE] [--optimizer sgd|momentum|adam] [--seed N] [--logdir DIR] [--log-every N] [--stop-after N]\n"
         "       [--export DIR]\n"
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
         "DIR/model.safetensors` makes an ONNX model of it (docs/onnx.md).\n";
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

using any_optimizer = std::variant<sgd, momentum, adam>;

// Cosine decay over the whole run: large steps early, small ones to settle at the end.
inline any_optimizer make_optimizer(const training_flags& f, std::uint64_t total_steps) {
  const learning_rate_schedule rate = cosine_decay(f.learning_rate, std::max<std::uint64_t>(total_steps, 1));
  if (f.optimizer == "sgd") return sgd({.learning_rate = rate});
  if (f.optimizer == "momentum") return momentum({.learning_rate = rate, .momentum = 0.9});
  return adam({.learning_rate = rate});
}

// The training logits of a model without dropout: the inference logits themselves.
template <class Logits>
struct same_logits {
  Logits logits;
  const Logits& operator()(std::uint64_t /*step_seed*/) const { return logits; }
};

// A classifier on images [n, 784] with labels in 0..9. `logits` is the inference model;
// `training_logits(step_seed)` the model as trained at one step (a model with dropout draws its masks
// from the seed, which the loop derives from the run's seed and the optimiser's step count, so a resumed
// run draws the masks an uninterrupted one would).
template <class X, class Y, class Logits, class TrainingLogits, class... Variables>
struct classifier {
  std::string name;  // recorded in checkpoints, checked when resuming
  X images;
  Y labels;
  Logits logits;
  TrainingLogits training_logits;
  std::tuple<Variables...> variables;
  std::function<void(params&, std::mt19937_64&)> initialize;
};

template <class X, class Y, class Logits, class TrainingLogits, class... Variables>
classifier<X, Y, Logits, TrainingLogits, Variables...> make_classifier(
    std::string name, X images, Y labels, Logits logits, TrainingLogits training_logits,
    std::tuple<Variables...> variables, std::function<void(params&, std::mt19937_64&)> initialize) {
  return {std::move(name), images, labels, logits, training_logits, variables, std::move(initialize)};
}
template <class X, class Y, class Logits, class... Variables>
auto make_classifier(std::string name, X images, Y labels, Logits logits, std::tuple<Variables...> variables,
                     std::function<void(params&, std::mt19937_64&)> initialize) {
  return make_classifier(std::move(name), images, labels, logits, same_logits<Logits>{logits}, variables,
                         std::move(initialize));
}

// In batches of `batch` examples: a convolutional model's activations for the whole test split
// would take gigabytes.
template <class Logits, class X>
double test_accuracy(const Logits& logits, const X& images, const image_split& test, const params& model,
                     std::size_t batch = 1000) {
  if (test.size() == 0) return 0.0;
  const batch_plan plan(test.size(), batch);
  image_batch b;
  accuracy_counter counter;
  for (std::size_t i = 0; i < plan.batch_count(); ++i) {
    load_batch(test, plan, i, b);
    counter.add(eval(logits, images = b.images, model), b.labels);
  }
  return counter.accuracy();
}

// One dropout seed per optimiser step (splitmix64 of the run seed and the step).
inline std::uint64_t step_seed(std::uint64_t run_seed, std::uint64_t step) {
  return epoch_seed(run_seed ^ 0xD1B54A32D192ED03ull, step);
}

// Under the variables' own names, so the histograms read like the model's code. Their spread over the
// epochs is where a too-high learning rate or dying ReLU units show first.
template <class... Variables>
void log_parameter_histograms(tensorboard::summary_writer& log, const params& model,
                              const std::tuple<Variables...>& variables, std::int64_t step) {
  std::apply(
      [&](const auto&... v) {
        (log.add_histogram("parameters/" + std::string(v.name.view()),
                           model.view<typename std::remove_cvref_t<decltype(v)>::value_type,
                                      typename std::remove_cvref_t<decltype(v)>::shape_type>(v.name.view()),
                           step),
         ...);
      },
      variables);
}

// The trained inference model as files other programs read (--export): the logits' graph, its
// parameters as a checkpoint, and a test batch with the typed model's logits for it, so that a
// reader of the graph (or of its ONNX export) can check it computes what this program did.
template <class Model>
void export_model(const std::filesystem::path& dir, const Model& m, const image_split& test, const params& model) {
  std::filesystem::create_directories(dir);
  save_graph_json_file((dir / "model.json").string(), to_graph(m.logits));
  save_checkpoint((dir / "model.safetensors").string(), {{"", model}}, {{"model", m.name}});
  image_batch b;
  const batch_plan plan(test.size(), 256);
  load_batch(test, plan, 0, b);
  save_npy((dir / "test_images.npy").string(), b.images);
  save_npy((dir / "test_labels.npy").string(), b.labels);
  save_npy((dir / "test_logits.npy").string(), eval(m.logits, m.images = b.images, model));
  std::cerr << "exported " << m.name << " to " << dir.string() << "\n";
}

template <class Model>
int run_training(int argc, char** argv, const Model& m, const training_flags& defaults) {
  training_flags f;
  try {
    f = parse_flags(argc, argv, defaults);
  } catch (const usage_error& e) {
    if (*e.what()) std::cerr << argv[0] << ": " << e.what() << "\n";
    std::cerr << usage(argv[0], defaults);
    return *e.what() ? exit_usage : 0;
  }
  if (f.device == "cuda") {
    std::cerr << argv[0] << ": --device cuda: the training examples are built for the CPU backend only "
                 "(a CUDA training step is in tests/cuda/training_test.cu); use --device cpu\n";
    return exit_usage;
  }
  if (!std::filesystem::exists(f.data)) {
    std::cerr << argv[0] << ": no data set at '" << f.data
              << "' (install Debian's dataset-fashion-mnist, or pass --data DIR)\n";
    return exit_no_dataset;
  }

  image_dataset data = fashion_mnist(f.data, {.train_limit = f.limit, .test_limit = f.limit});
  const standardization s = statistics_of(data.train.images);
  standardize(data.train.images, s);
  standardize(data.test.images, s);

  // The fused op: one pass per row forward and back, where log_softmax(logits) * one_hot(labels) would
  // reach the logits four times and derive four adjoints for them.
  const auto loss_at = [&](std::uint64_t step) {
    return mean(softmax_cross_entropy(m.training_logits(step_seed(f.seed, step)), m.labels));
  };
  const auto loss = loss_at(0);
  auto gradients = std::apply(
      [](const auto&... v) {
        return std::tuple{tensor<typename std::remove_cvref_t<decltype(v)>::value_type,
                                 typename std::remove_cvref_t<decltype(v)>::shape_type>{}...};
      },
      m.variables);

  const std::size_t batches_per_epoch = batch_plan(data.train.size(), f.batch).batch_count();
  const any_optimizer optimizer = make_optimizer(f, std::uint64_t(f.epochs) * batches_per_epoch);
  const std::string optimizer_name = f.optimizer;

  params model, state;
  std::size_t first_epoch = 0;
  if (!f.checkpoint.empty() && std::filesystem::exists(f.checkpoint)) {
    const checkpoint c = load_checkpoint(f.checkpoint);
    const auto recorded = [&](const std::string& key) {
      const auto it = c.metadata.find(key);
      return it == c.metadata.end() ? std::string("(none)") : it->second;
    };
    if (recorded("model") != m.name || recorded("optimizer") != optimizer_name)
      throw value_error("checkpoint '" + f.checkpoint + "' holds model " + recorded("model") + " trained with " +
                        recorded("optimizer") + ", not " + m.name + " with " + optimizer_name);
    model = c.part("model/");
    state = c.part("optimizer/");
    first_epoch = std::stoull(recorded("epoch"));
    std::cerr << "resuming from " << f.checkpoint << " after epoch " << first_epoch << " (step "
              << optimizer_step(state) << ")\n";
  } else {
    std::mt19937_64 engine(f.seed);
    m.initialize(model, engine);
    state = std::visit([&](const auto& o) { return std::apply([&](const auto&... v) { return o.initial_state(model, v...); }, m.variables); },
                       optimizer);
  }

  std::cerr << m.name << ": " << data.train.size() << " training and " << data.test.size() << " test examples, batch "
            << f.batch << ", " << optimizer_name << " lr " << f.learning_rate << " (cosine decay), " << f.epochs
            << " epochs\n";

  // Every summary is stepped by the optimiser's update count, so the batch and epoch curves share an
  // axis and a resumed run continues its curves where the checkpoint left them.
  std::optional<tensorboard::summary_writer> log;
  if (!f.logdir.empty()) {
    log.emplace(f.logdir);
    const auto step = std::int64_t(optimizer_step(state));
    log->add_graph(to_graph(loss));
    log->add_text("run", m.name + ": " + optimizer_name + " lr " + std::to_string(f.learning_rate) + " (cosine decay), batch " +
                             std::to_string(f.batch) + ", " + std::to_string(f.epochs) + " epochs, seed " + std::to_string(f.seed),
                  step);
    log_parameter_histograms(*log, model, m.variables, step);
    std::cerr << "TensorBoard summaries in " << log->path().string() << "\n";
  }

  tensor<float, shape<>> batch_loss;
  tensor<float, shape<dyn, 10>> batch_logits;
  image_batch batch;
  const std::size_t last_epoch = f.stop_after ? std::min(f.stop_after, f.epochs) : f.epochs;
  for (std::size_t epoch = first_epoch; epoch < last_epoch; ++epoch) {
    const batch_plan plan(data.train.size(), f.batch, epoch_seed(f.seed, epoch));
    epoch_progress progress("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(f.epochs), plan.batch_count());
    running_mean mean_loss;
    accuracy_counter train_accuracy;
    for (std::size_t b = 0; b < plan.batch_count(); ++b) {
      load_batch(data.train, plan, b, batch);
      const auto step_loss = loss_at(optimizer_step(state));
      std::apply(
          [&](auto&... g) {
            std::apply(
                [&](const auto&... v) {
                  eval_into(std::tie(batch_loss, batch_logits, g...), step_loss,
                            m.training_logits(step_seed(f.seed, optimizer_step(state))), grad(step_loss, v)...,
                            m.images = batch.images, m.labels = batch.labels, model);
                },
                m.variables);
          },
          gradients);
      std::visit([&](const auto& o) { o.step(model, state, m.variables, gradients); }, optimizer);
      mean_loss.add(batch_loss[0], double(batch.labels.size()));
      train_accuracy.add(batch_logits, batch.labels);
      progress.update(b + 1, train_accuracy.seen(), mean_loss.mean(), train_accuracy.accuracy());
      if (log && (b + 1) % f.log_every == 0) {
        const auto step = std::int64_t(optimizer_step(state));
        log->add_scalar("batch/loss", batch_loss[0], step);
        log->add_scalar("batch/accuracy", accuracy(batch_logits, batch.labels), step);
      }
    }
    const epoch_summary summary = progress.finish();
    const double test = test_accuracy(m.logits, m.images, data.test, model);
    if (log) {
      const auto step = std::int64_t(optimizer_step(state));
      log->add_scalar("epoch/train_loss", summary.mean_loss, step);
      log->add_scalar("epoch/train_accuracy", summary.accuracy, step);
      log->add_scalar("epoch/test_accuracy", test, step);
      log->add_scalar("epoch/examples_per_second", summary.examples_per_second(), step);
      log_parameter_histograms(*log, model, m.variables, step);
      log->flush();
    }
    std::printf("epoch %zu: train loss %.4f, train accuracy %.4f, test accuracy %.4f, %.1f s, %.0f examples/s\n",
                epoch + 1, summary.mean_loss, summary.accuracy, test, summary.seconds, summary.examples_per_second());
    std::fflush(stdout);
    if (!f.checkpoint.empty())
      save_checkpoint(f.checkpoint, {{"model/", model}, {"optimizer/", state}},
                      {{"model", m.name},
                       {"optimizer", optimizer_name},
                       {"epoch", std::to_string(epoch + 1)},
                       {"step", std::to_string(optimizer_step(state))},
                       {"seed", std::to_string(f.seed)},
                       {"batch", std::to_string(f.batch)}});
  }
  if (log) log->close();  // a failed write surfaces here rather than vanishing in the destructor
  if (!f.export_dir.empty()) export_model(f.export_dir, m, data.test, model);
  std::printf("test_accuracy=%.4f\n", test_accuracy(m.logits, m.images, data.test, model));
  return 0;
}

template <class Model>
int main_of(int argc, char** argv, const Model& m, const training_flags& defaults) {
  try {
    return run_training(argc, argv, m, defaults);
  } catch (const error& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace symflow::examples
