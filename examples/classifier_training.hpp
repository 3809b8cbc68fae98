#pragma once
// What the Fashion-MNIST classifier examples share: their command line, loading and standardising
// the data, the training loop (progress bar per epoch, optimiser step, checkpoint after each
// epoch and resuming from it, TensorBoard summaries with --logdir) and the test accuracy they end with. Each example supplies only its
// model: placeholders, variables, initial values and the logits expression. With --distributed
// (under mpirun) the ranks split each batch and sum their gradients (data_parallel.hpp): the same
// steps as one process, up to float rounding; rank 0 prints, logs, checkpoints and exports.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>

#include <omp.h>

#include <symflow/data/mnist.hpp>
#include <symflow/data/normalize.hpp>
#include <symflow/debug/tensorboard.hpp>
#include <symflow/io/json.hpp>
#include <symflow/io/npy.hpp>
#include <symflow/ir/to_graph.hpp>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>
#include <symflow/train/checkpoint.hpp>

#include "data_parallel.hpp"
#include "training_flags.hpp"

namespace symflow::examples {

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
// would take gigabytes. Each rank counts its share of the split.
template <class Logits, class X>
double test_accuracy(const Logits& logits, const X& images, const image_split& test, const params& model,
                     training_ranks& ranks, std::size_t batch = 1000) {
  const distributed::shard mine = ranks.rows(test.size());
  image_batch b;
  accuracy_counter counter;
  std::vector<std::size_t> rows;
  for (std::size_t begin = mine.begin; begin < mine.end; begin += batch) {
    rows.resize(std::min(batch, mine.end - begin));
    std::iota(rows.begin(), rows.end(), begin);
    gather_rows(test.images, rows, b.images);
    gather_rows(test.labels, rows, b.labels);
    counter.add(eval(logits, images = b.images, model), b.labels);
  }
  double counts[2] = {double(counter.correct()), double(counter.seen())};
  ranks.sum(counts, 2, "test accuracy counts");
  return counts[1] ? counts[0] / counts[1] : 0.0;
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
int run_training(int argc, char** argv, const Model& m, const training_flags& defaults, training_ranks& ranks) {
  training_flags f;
  try {
    f = parse_flags(argc, argv, defaults);
  } catch (const usage_error& e) {  // an empty message: --help
    if (!*e.what()) std::cout << usage(argv[0], defaults);
    else std::cerr << argv[0] << ": " << e.what() << "\n";
    return *e.what() ? exit_usage : 0;
  }
  if (f.distributed) ranks.start_distributed(argc, argv);
  if (f.threads) omp_set_num_threads(int(f.threads));
  std::ostream quiet(nullptr);  // what the ranks other than 0 would print
  std::ostream& note = ranks.is_root() ? std::cerr : quiet;
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
  const auto loss_at = [&](std::uint64_t mask_seed) {
    return mean(softmax_cross_entropy(m.training_logits(mask_seed), m.labels));
  };
  const auto loss = loss_at(step_seed(f.seed, 0));
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
  if (!ranks.is_root()) {
    // rank 0's model, state and epoch come below
  } else if (!f.checkpoint.empty() && std::filesystem::exists(f.checkpoint)) {
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
    note << "resuming from " << f.checkpoint << " after epoch " << first_epoch << " (step "
              << optimizer_step(state) << ")\n";
  } else {
    std::mt19937_64 engine(f.seed);
    m.initialize(model, engine);
    state = std::visit([&](const auto& o) { return std::apply([&](const auto&... v) { return o.initial_state(model, v...); }, m.variables); },
                       optimizer);
  }
  ranks.share(model, state, first_epoch);  // every rank starts from rank 0's values

  note << m.name << ": " << data.train.size() << " training and " << data.test.size() << " test examples, batch "
            << f.batch << ", " << optimizer_name << " lr " << f.learning_rate << " (cosine decay), " << f.epochs
            << " epochs" << (ranks.distributed() ? " on " + std::to_string(ranks.size()) + " ranks" : std::string()) << "\n";

  // Every summary is stepped by the optimiser's update count, so the batch and epoch curves share an
  // axis and a resumed run continues its curves where the checkpoint left them.
  std::optional<tensorboard::summary_writer> log;
  if (!f.logdir.empty() && ranks.is_root()) {
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
    epoch_progress progress("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(f.epochs), plan.batch_count(), note);
    running_mean mean_loss;
    double correct = 0, seen = 0;
    for (std::size_t b = 0; b < plan.batch_count(); ++b) {
      const std::span<const std::size_t> rows = plan.batch(b);
      const distributed::shard mine = ranks.rows(rows.size());
      // A dropout mask per rank: each draws its rows' masks from its own stream.
      const std::uint64_t masks = step_seed(f.seed, optimizer_step(state)) ^ (0x9E3779B97F4A7C15ull * std::uint64_t(ranks.rank()));
      double sums[3] = {0, 0, double(mine.size())};  // loss x rows, correct predictions, rows
      if (mine.size()) {
        gather_rows(data.train.images, mine.of(rows), batch.images);
        gather_rows(data.train.labels, mine.of(rows), batch.labels);
        const auto step_loss = loss_at(masks);
        std::apply(
            [&](auto&... g) {
              std::apply(
                  [&](const auto&... v) {
                    eval_into(std::tie(batch_loss, batch_logits, g...), step_loss, m.training_logits(masks),
                              grad(step_loss, v)..., m.images = batch.images, m.labels = batch.labels, model);
                  },
                  m.variables);
            },
            gradients);
        sums[0] = double(batch_loss[0]) * double(mine.size());
        sums[1] = double(correct_predictions(batch_logits, batch.labels));
      }
      ranks.sum_gradients(gradients, mine.weight());  // a rank without rows sends zeros
      ranks.sum(sums, 3, "batch loss and accuracy");
      std::visit([&](const auto& o) { o.step(model, state, m.variables, gradients); }, optimizer);
      const double batch_mean_loss = ranks.distributed() ? sums[0] / sums[2] : double(batch_loss[0]);
      mean_loss.add(batch_mean_loss, sums[2]);
      correct += sums[1];
      seen += sums[2];
      progress.update(b + 1, std::size_t(seen), mean_loss.mean(), correct / seen);
      if (log && (b + 1) % f.log_every == 0) {
        const auto step = std::int64_t(optimizer_step(state));
        log->add_scalar("batch/loss", batch_mean_loss, step);
        log->add_scalar("batch/accuracy", sums[1] / sums[2], step);
      }
    }
    const epoch_summary summary = progress.finish();
    const double test = test_accuracy(m.logits, m.images, data.test, model, ranks);
    if (log) {
      const auto step = std::int64_t(optimizer_step(state));
      log->add_scalar("epoch/train_loss", summary.mean_loss, step);
      log->add_scalar("epoch/train_accuracy", summary.accuracy, step);
      log->add_scalar("epoch/test_accuracy", test, step);
      log->add_scalar("epoch/examples_per_second", summary.examples_per_second(), step);
      log_parameter_histograms(*log, model, m.variables, step);
      log->flush();
    }
    if (ranks.is_root())
      std::printf("epoch %zu: train loss %.4f, train accuracy %.4f, test accuracy %.4f, %.1f s, %.0f examples/s\n",
                  epoch + 1, summary.mean_loss, summary.accuracy, test, summary.seconds, summary.examples_per_second());
    std::fflush(stdout);
    if (!f.checkpoint.empty() && ranks.is_root())
      save_checkpoint(f.checkpoint, {{"model/", model}, {"optimizer/", state}},
                      {{"model", m.name},
                       {"optimizer", optimizer_name},
                       {"epoch", std::to_string(epoch + 1)},
                       {"step", std::to_string(optimizer_step(state))},
                       {"seed", std::to_string(f.seed)},
                       {"batch", std::to_string(f.batch)}});
  }
  if (ranks.distributed()) note << ranks.exchange_report() << "\n";
  if (log) log->close();  // a failed write surfaces here rather than vanishing in the destructor
  if (!f.export_dir.empty() && ranks.is_root()) export_model(f.export_dir, m, data.test, model);
  const double final_accuracy = test_accuracy(m.logits, m.images, data.test, model, ranks);
  if (ranks.is_root()) std::printf("test_accuracy=%.4f\n", final_accuracy);
  return 0;
}

template <class Model>
int main_of(int argc, char** argv, const Model& m, const training_flags& defaults) {
  training_ranks ranks;  // outlives the run: an error is printed before a distributed job ends
  try {
    return run_training(argc, argv, m, defaults, ranks);
  } catch (const error& e) {
    std::cerr << argv[0] << (ranks.distributed() ? " (rank " + std::to_string(ranks.rank()) + ")" : std::string()) << ": "
              << e.what() << "\n";
    if (ranks.distributed()) ranks.end_job_after_error(1);
    return 1;
  }
}

}  // namespace symflow::examples
