// The walkthrough of docs/debugging.md, runnable: a classifier whose loss turns NaN at the first step,
// check_numerics naming the node responsible, the fix, the fixed run in TensorBoard, a trace of the
// hidden layer and a profile of the training step. It exits 1 when any step does not behave as the
// page says, so the CI test keeps the page true.
//
//   debugging_walkthrough [--logdir DIR]     (default: a new directory under the system's temp dir)
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

#include <symflow/data/batches.hpp>
#include <symflow/debug/localise.hpp>  // check_numerics names the node, not just "an output"
#include <symflow/debug/tensorboard.hpp>
#include <symflow/debug/trace_eval.hpp>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>

using namespace symflow;

namespace {

constexpr std::size_t classes = 3, features = 8;
constexpr std::size_t train_examples = 600, test_examples = 300, batch_size = 32, epochs = 5;

struct labelled_data {
  tensor<float, shape<dyn, features>> x;
  tensor<std::int32_t, shape<dyn>> y;
};

// Three Gaussian blobs in raw sensor units: centres up to +-60 and a spread of 15. Nobody
// standardised them, which is what makes the logits large enough for softmax to underflow.
labelled_data raw_readings(std::size_t n, const tensor<float, shape<classes, features>>& centres, std::mt19937_64& engine) {
  labelled_data d{tensor<float, shape<dyn, features>>(extents_t<2>{n, features}, uninitialized),
                  tensor<std::int32_t, shape<dyn>>(extents_t<1>{n}, uninitialized)};
  fill_initial(d.x, normal_init{0, 15}, engine);
  for (std::size_t i = 0; i < n; ++i) {
    d.y[i] = std::int32_t(i % classes);
    for (std::size_t j = 0; j < features; ++j) d.x(i, j) += centres(std::size_t(d.y[i]), j);
  }
  return d;
}

bool expect(bool condition, std::string_view what) {
  if (!condition) std::cerr << "debugging_walkthrough: FAILED: " << what << "\n";
  return condition;
}

int run(const std::filesystem::path& logdir) {
  std::mt19937_64 engine(2024);
  tensor<float, shape<classes, features>> centres;
  fill_initial(centres, uniform_init{-60, 60}, engine);
  const labelled_data train = raw_readings(train_examples, centres, engine);
  const labelled_data test = raw_readings(test_examples, centres, engine);

  // --- the model and the naive loss ---
  auto x = placeholder<"x", float, shape<dyn, features>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W1 = variable<"W1", float, shape<features, 16>>();
  auto b1 = variable<"b1", float, shape<16>>();
  auto W2 = variable<"W2", float, shape<16, classes>>();
  auto b2 = variable<"b2", float, shape<classes>>();
  auto hidden = scope("hidden", [&] { return relu(matmul(x, W1) + b1); });
  auto logits = scope("logits", [&] { return matmul(hidden, W2) + b2; });
  auto naive_loss = scope("loss", [&] { return -mean(sum(one_hot<classes, float>(y) * log(softmax(logits)), axes<1>)); });

  params model;
  initialize(model, W1, he_normal{}, engine);
  initialize(model, b1, zeros, engine);
  initialize(model, W2, glorot_uniform{}, engine);
  initialize(model, b2, zeros, engine);

  tensor<float, shape<dyn, features>> batch_x;
  tensor<std::int32_t, shape<dyn>> batch_y;
  const batch_plan first_epoch(train_examples, batch_size, epoch_seed(7, 0));
  gather_rows(train.x, first_epoch.batch(0), batch_x);
  gather_rows(train.y, first_epoch.batch(0), batch_y);

  // --- 1. the symptom: the first step's loss is NaN ---
  std::cout << "== 1. the symptom\n";
  const float first_loss = eval(naive_loss, x = batch_x, y = batch_y, model)[0];
  std::cout << "loss at step 0: " << first_loss << "\n";
  if (!expect(std::isnan(first_loss), "the naive loss is NaN at step 0")) return 1;
  // exp underflows to exactly 0 in float32 below about -103.97, so a row whose logits spread wider
  // than that has a class with probability 0.
  const auto first_logits = eval(logits, x = batch_x, model);
  double widest = 0;
  for (std::size_t i = 0; i < batch_y.size(); ++i) {
    float lo = first_logits(i, 0), hi = lo;
    for (std::size_t c = 1; c < classes; ++c) lo = std::min(lo, first_logits(i, c)), hi = std::max(hi, first_logits(i, c));
    widest = std::max(widest, double(hi - lo));
  }
  std::cout << "widest spread of one example's logits: " << widest << "\n";

  // --- 2. check_numerics names the node ---
  std::cout << "\n== 2. check_numerics\n";
  auto [naive_dW1, naive_db1, naive_dW2, naive_db2] = grad(naive_loss, W1, b1, W2, b2);
  tensor<float, shape<>> loss_value;
  tensor<float, shape<features, 16>> gW1;
  tensor<float, shape<16>> gb1;
  tensor<float, shape<16, classes>> gW2;
  tensor<float, shape<classes>> gb2;
  try {
    check_numerics_scope checked;  // or SYMFLOW_CHECK_NUMERICS=1 in the environment
    eval_into(std::tie(loss_value, gW1, gb1, gW2, gb2), naive_loss, naive_dW1, naive_db1, naive_dW2, naive_db2,
              x = batch_x, y = batch_y, model);
    return expect(false, "check_numerics throws numerics_error"), 1;
  } catch (const numerics_error& e) {
    std::cout << e.what() << "\n";
    if (e.operands().size() == 1)
      std::cout << "exact zeros in the log's operand: " << e.operands()[0].health.zero << " of " << e.operands()[0].health.size << "\n";
    const bool named = expect(e.op() == "log", "the error names the log") &&
                       expect(e.node() == "loss/log", "the node's scoped name is loss/log") &&
                       expect(e.location().find("debugging_walkthrough.cpp:") != std::string::npos, "the error gives the source line") &&
                       expect(e.health().negative_infinity > 0, "the log produced -Inf") &&
                       expect(e.operands().size() == 1 && e.operands()[0].health.zero > 0, "the log's operand holds exact zeros");
    if (!named) return 1;
  }

  // --- 3. the fix: log_softmax never takes the log of something that can underflow ---
  std::cout << "\n== 3. the fix\n";
  auto loss = scope("loss", [&] { return -mean(sum(one_hot<classes, float>(y) * log_softmax(logits), axes<1>)); });
  auto [dW1, db1, dW2, db2] = grad(loss, W1, b1, W2, b2);
  {
    check_numerics_scope checked;
    eval_into(std::tie(loss_value, gW1, gb1, gW2, gb2), loss, dW1, db1, dW2, db2, x = batch_x, y = batch_y, model);
  }
  std::cout << "loss at step 0: " << loss_value[0] << " (finite, checked)\n";
  if (!expect(std::isfinite(loss_value[0]), "the log_softmax loss is finite")) return 1;

  // --- 4. train it, watched in TensorBoard ---
  std::cout << "\n== 4. training, logged to " << logdir.string() << "\n";
  tensorboard::summary_writer log(logdir);
  log.add_graph(to_graph(loss));
  const adam optimizer({.learning_rate = 1e-2});
  params state = optimizer.initial_state(model, W1, b1, W2, b2);
  const auto log_histograms = [&](std::int64_t step) {
    log.add_histogram("parameters/W1", model.view<float, shape<features, 16>>("W1"), step);
    log.add_histogram("parameters/b1", model.view<float, shape<16>>("b1"), step);
    log.add_histogram("parameters/W2", model.view<float, shape<16, classes>>("W2"), step);
    log.add_histogram("parameters/b2", model.view<float, shape<classes>>("b2"), step);
  };
  log_histograms(0);
  tensor<float, shape<dyn, classes>> batch_logits;
  double test_accuracy = 0;
  {
    check_numerics_scope checked;  // every training step checked: the fix holds beyond step 0
    for (std::size_t epoch = 0; epoch < epochs; ++epoch) {
      const batch_plan plan(train_examples, batch_size, epoch_seed(7, epoch));
      epoch_progress progress("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs), plan.batch_count(), std::cout, false);
      running_mean mean_loss;
      accuracy_counter train_accuracy;
      for (std::size_t k = 0; k < plan.batch_count(); ++k) {
        gather_rows(train.x, plan.batch(k), batch_x);
        gather_rows(train.y, plan.batch(k), batch_y);
        eval_into(std::tie(loss_value, batch_logits, gW1, gb1, gW2, gb2), loss, logits, dW1, db1, dW2, db2, x = batch_x,
                  y = batch_y, model);
        optimizer.step(model, state, std::tie(W1, b1, W2, b2), std::tie(gW1, gb1, gW2, gb2));
        mean_loss.add(loss_value[0], double(batch_y.size()));
        train_accuracy.add(batch_logits, batch_y);
        progress.update(k + 1, train_accuracy.seen(), mean_loss.mean(), train_accuracy.accuracy());
        const auto step = std::int64_t(optimizer_step(state));
        if (step % 5 == 0) log.add_scalar("batch/loss", loss_value[0], step);
      }
      const epoch_summary summary = progress.finish();
      test_accuracy = accuracy(eval(logits, x = test.x, model), test.y);
      const auto step = std::int64_t(optimizer_step(state));
      log.add_scalar("epoch/train_loss", summary.mean_loss, step);
      log.add_scalar("epoch/train_accuracy", summary.accuracy, step);
      log.add_scalar("epoch/test_accuracy", test_accuracy, step);
      log_histograms(step);
    }
  }
  log.close();
  std::printf("test accuracy %.4f\n", test_accuracy);
  std::cout << "view with: tensorboard --logdir " << logdir.string() << "\n";
  if (!expect(test_accuracy > 0.9, "training reaches a test accuracy above 0.9")) return 1;
  if (!expect(std::filesystem::exists(log.path()), "the event file exists")) return 1;

  // --- 5. trace the hidden layer ---
  std::cout << "\n== 5. trace of the hidden layer (2 test examples)\n";
  tensor<float, shape<dyn, features>> two_x;
  tensor<std::int32_t, shape<dyn>> two_y;
  const std::size_t first_two[] = {0, 1};
  gather_rows(test.x, first_two, two_x);
  gather_rows(test.y, first_two, two_y);
  trace_spec spec;
  spec.add("hidden/*", trace_level::full_health).add("hidden/relu", trace_level::values);
  const traced_run traced = trace_eval(spec, loss, x = two_x, y = two_y, model);
  std::cout << traced.trace.to_string();
  std::ofstream(logdir / "hidden_trace.json") << traced.trace.to_json();
  const traced_value* relu_values = traced.trace.find("hidden/relu");
  const traced_value* pre_activation = traced.trace.find("hidden/add");
  if (!expect(relu_values && relu_values->values && relu_values->values->size() == 2 * 16, "hidden/relu is traced with values") ||
      !expect(pre_activation && pre_activation->level == trace_level::full_health, "hidden/add is traced with full health") ||
      !expect(relu_values->health.negative == 0, "relu outputs are never negative"))
    return 1;

  // --- 6. where a training step spends its time ---
  std::cout << "\n== 6. profile of one training step (batch of " << batch_size << ")\n";
  gather_rows(train.x, first_epoch.batch(0), batch_x);
  gather_rows(train.y, first_epoch.batch(0), batch_y);
  const traced_run profiled = profile_eval(loss, dW1, db1, dW2, db2, x = batch_x, y = batch_y, model);
  std::cout << profiled.profile.slowest(5);
  if (!expect(!profiled.profile.entries.empty(), "the profile lists units of work")) return 1;
  std::cout << "\nwalkthrough: every step behaved as described\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::filesystem::path logdir = std::filesystem::temp_directory_path() / ("symflow-walkthrough-" + std::to_string(::getpid()));
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--logdir" && i + 1 < argc) {
      logdir = argv[++i];
    } else {
      std::cerr << "usage: " << argv[0] << " [--logdir DIR]\n";
      return flag == "--help" || flag == "-h" ? 0 : 2;
    }
  }
  try {
    return run(logdir);
  } catch (const error& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 1;
  }
}
