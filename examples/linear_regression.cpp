// Linear regression: the seed's model y = x * w + b, now fitted instead of given. The data are
// synthetic, drawn from the seed's w = 4 and b = 2 with Gaussian noise, so the fit can be checked
// against the truth: the program fails (exit code 3) when the recovered w or b is off by more
// than 0.05.
//
//   linear_regression [--epochs N] [--batch N] [--checkpoint PATH] [--logdir DIR] [--limit N] [--lr RATE] ...
//
// Regression has no accuracy, so test_accuracy is the coefficient of determination on the held-out
// set, R^2 = 1 - sum((prediction - y)^2) / sum((y - mean(y))^2), floored at 0: the fraction of the
// targets' variance the line explains. The noise caps it below 1 (about 0.998 here). The last line
// printed is test_accuracy=0.XXXX. --export DIR writes the prediction's graph with the fitted w and b
// (model.json), the test inputs (feed_x.npy) and the predictions for them (expected.npy).
#include <cmath>

#include "classifier_training.hpp"
#include "export_files.hpp"

using namespace symflow;

namespace {

constexpr float true_w = 4.0f, true_b = 2.0f;  // the seed's values
constexpr float noise_stddev = 0.1f;
constexpr std::size_t train_examples = 1000, test_examples = 200;
constexpr double recovery_tolerance = 0.05;
constexpr int exit_not_recovered = 3;

struct regression_split {
  tensor<float, shape<dyn>> x, y;
  std::size_t size() const { return x.size(); }
};

// x ~ N(0, 1) keeps the problem well conditioned (E[x^2] = 1), so plain SGD converges within an epoch.
regression_split synthetic_split(std::size_t n, std::mt19937_64& engine) {
  regression_split s{tensor<float, shape<dyn>>(extents_t<1>{n}, uninitialized), tensor<float, shape<dyn>>(extents_t<1>{n}, uninitialized)};
  fill_initial(s.x, normal_init{0, 1}, engine);
  fill_initial(s.y, normal_init{0, noise_stddev}, engine);
  for (std::size_t i = 0; i < n; ++i) s.y[i] += true_w * s.x[i] + true_b;
  return s;
}

// R^2 accumulated batch by batch, so the progress bar can show it for the epoch so far.
class r_squared_counter {
 public:
  template <class Predictions, class Targets>
  void add(const Predictions& prediction, const Targets& y) {
    for (std::size_t i = 0; i < y.size(); ++i) {
      const double t = y[i], r = double(prediction[i]) - t;
      squared_error_ += r * r;
      sum_ += t;
      sum_of_squares_ += t * t;
    }
    count_ += y.size();
  }
  double r_squared() const {
    if (count_ == 0) return 0;
    const double variation = sum_of_squares_ - sum_ * sum_ / double(count_);
    return variation > 0 ? std::max(0.0, 1.0 - squared_error_ / variation) : 0.0;
  }

 private:
  double squared_error_ = 0, sum_ = 0, sum_of_squares_ = 0;
  std::size_t count_ = 0;
};

int run(int argc, char** argv) {
  examples::training_flags defaults;
  defaults.epochs = 10;
  defaults.batch = 32;
  defaults.learning_rate = 0.1;
  defaults.optimizer = "sgd";
  defaults.data = "(none: synthetic)";
  examples::training_flags f;
  try {
    f = examples::parse_flags(argc, argv, defaults);
  } catch (const examples::usage_error& e) {
    if (*e.what()) {
      std::cerr << argv[0] << ": " << e.what() << "\n";
      return examples::exit_usage;
    }
    std::cout << examples::usage(argv[0], defaults)
              << "the data are synthetic: " << train_examples << " training and " << test_examples
              << " test examples of y = 4x + 2 + N(0, 0.1^2); --data is ignored.\n"
              << "the summaries here: R^2 in place of accuracy, w and b as scalars rather than histograms.\n";
    return *e.what() ? examples::exit_usage : 0;
  }
  if (f.device == "cuda") {
    std::cerr << argv[0] << ": --device cuda: this example runs on the CPU backend only; use --device cpu\n";
    return examples::exit_usage;
  }
  if (f.data != defaults.data)
    std::cerr << argv[0] << ": --data " << f.data << " ignored: the data set is synthetic (y = 4x + 2 + noise)\n";

  std::mt19937_64 data_engine(f.seed);
  const regression_split train = synthetic_split(std::min(f.limit, train_examples), data_engine);
  const regression_split test = synthetic_split(std::min(f.limit, test_examples), data_engine);

  auto x = placeholder<"x", float, shape<dyn>>();
  auto y = placeholder<"y", float, shape<dyn>>();
  auto w = variable<"w", float, shape<>>();
  auto b = variable<"b", float, shape<>>();
  auto prediction = x * w + b;
  auto loss = mean(square(prediction - y));
  auto [dw, db] = grad(loss, w, b);

  const std::size_t batches_per_epoch = batch_plan(train.size(), f.batch).batch_count();
  const examples::any_optimizer optimizer = examples::make_optimizer(f, std::uint64_t(f.epochs) * batches_per_epoch);
  const std::string model_name = "linear-regression";

  params model, state;
  std::size_t first_epoch = 0;
  if (!f.checkpoint.empty() && std::filesystem::exists(f.checkpoint)) {
    const checkpoint c = load_checkpoint(f.checkpoint);
    const auto recorded = [&](const std::string& key) {
      const auto it = c.metadata.find(key);
      return it == c.metadata.end() ? std::string("(none)") : it->second;
    };
    if (recorded("model") != model_name || recorded("optimizer") != f.optimizer)
      throw value_error("checkpoint '" + f.checkpoint + "' holds model " + recorded("model") + " trained with " +
                        recorded("optimizer") + ", not " + model_name + " with " + f.optimizer);
    model = c.part("model/");
    state = c.part("optimizer/");
    first_epoch = std::stoull(recorded("epoch"));
    std::cerr << "resuming from " << f.checkpoint << " after epoch " << first_epoch << "\n";
  } else {
    std::mt19937_64 engine(f.seed);
    initialize(model, w, zeros, engine);
    initialize(model, b, zeros, engine);
    state = std::visit([&](const auto& o) { return o.initial_state(model, w, b); }, optimizer);
  }
  const auto fitted = [&] { return std::pair{double(*model.view<float, shape<>>("w").data()), double(*model.view<float, shape<>>("b").data())}; };
  const auto test_r_squared = [&] {
    r_squared_counter r;
    r.add(eval(prediction, x = test.x, model), test.y);
    return r.r_squared();
  };

  std::optional<tensorboard::summary_writer> log;
  if (!f.logdir.empty()) {
    log.emplace(f.logdir);
    log->add_graph(to_graph(loss));
    std::cerr << "TensorBoard summaries in " << log->path().string() << "\n";
  }
  std::cerr << model_name << ": " << train.size() << " training and " << test.size() << " test examples, batch " << f.batch
            << ", " << f.optimizer << " lr " << f.learning_rate << " (cosine decay), " << f.epochs << " epochs\n";

  tensor<float, shape<>> batch_loss, gw, gb;
  tensor<float, shape<dyn>> batch_x, batch_y, batch_prediction;
  for (std::size_t epoch = first_epoch; epoch < f.epochs; ++epoch) {
    const batch_plan plan(train.size(), f.batch, epoch_seed(f.seed, epoch));
    epoch_progress progress("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(f.epochs), plan.batch_count());
    running_mean mean_loss;
    r_squared_counter fit;
    std::size_t seen = 0;
    for (std::size_t k = 0; k < plan.batch_count(); ++k) {
      gather_rows(train.x, plan.batch(k), batch_x);
      gather_rows(train.y, plan.batch(k), batch_y);
      eval_into(std::tie(batch_loss, batch_prediction, gw, gb), loss, prediction, dw, db, x = batch_x, y = batch_y, model);
      std::visit([&](const auto& o) { o.step(model, state, std::tie(w, b), std::tie(gw, gb)); }, optimizer);
      seen += batch_x.size();
      mean_loss.add(batch_loss[0], double(batch_x.size()));
      fit.add(batch_prediction, batch_y);
      progress.update(k + 1, seen, mean_loss.mean(), fit.r_squared());  // "acc" is R^2 here
      if (log && (k + 1) % f.log_every == 0) log->add_scalar("batch/loss", batch_loss[0], std::int64_t(optimizer_step(state)));
    }
    const epoch_summary summary = progress.finish();
    const double test_fit = test_r_squared();
    const auto [fitted_w, fitted_b] = fitted();
    std::printf("epoch %zu: train loss %.5f, train R^2 %.4f, test R^2 %.4f, w %.4f, b %.4f, %.0f examples/s\n", epoch + 1,
                summary.mean_loss, summary.accuracy, test_fit, fitted_w, fitted_b, summary.examples_per_second());
    std::fflush(stdout);
    if (log) {
      const auto step = std::int64_t(optimizer_step(state));
      log->add_scalar("epoch/train_loss", summary.mean_loss, step);
      log->add_scalar("epoch/train_r_squared", summary.accuracy, step);
      log->add_scalar("epoch/test_r_squared", test_fit, step);
      log->add_scalar("parameters/w", fitted_w, step);  // scalars: a histogram of one value says less than a curve
      log->add_scalar("parameters/b", fitted_b, step);
    }
    if (!f.checkpoint.empty())
      save_checkpoint(f.checkpoint, {{"model/", model}, {"optimizer/", state}},
                      {{"model", model_name},
                       {"optimizer", f.optimizer},
                       {"epoch", std::to_string(epoch + 1)},
                       {"step", std::to_string(optimizer_step(state))},
                       {"seed", std::to_string(f.seed)},
                       {"batch", std::to_string(f.batch)}});
  }
  if (log) log->close();

  const auto [fitted_w, fitted_b] = fitted();
  const bool recovered = std::abs(fitted_w - true_w) <= recovery_tolerance && std::abs(fitted_b - true_b) <= recovery_tolerance;
  std::printf("recovered w=%.4f b=%.4f (truth w=%g b=%g): %s\n", fitted_w, fitted_b, double(true_w), double(true_b),
              recovered ? "within 0.05" : "NOT within 0.05");
  std::printf("test_accuracy=%.4f\n", test_r_squared());
  if (!f.export_dir.empty()) {  // the prediction's graph, the test inputs and the predictions
    const auto predicted = eval(prediction, x = test.x, model);
    examples::write_export(f.export_dir, to_graph(prediction), model, {{"x", runtime_tensor(test.x).to_graph_tensor()}},
                           runtime_tensor(predicted).to_graph_tensor());
    std::cerr << "exported " << model_name << " to " << f.export_dir << "\n";
  }
  return recovered ? 0 : exit_not_recovered;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const error& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 1;
  }
}
