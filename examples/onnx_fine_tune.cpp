// Fine-tuning a model that arrives as ONNX: import it (its initialisers become parameters), build
// the classification loss onto the imported graph, train more epochs on Fashion-MNIST with the same
// optimisers and checkpoints as the typed examples, and export the improved model again.
//
//   onnx_fine_tune MODEL.onnx [--out TUNED.onnx] [--epochs N] [--batch N] [--lr RATE] [--limit N]
//                  [--data DIR] [--checkpoint PATH] [--stop-after N] [--reference DIR]
//
// The model takes standardised images [N, 784] (f32) and gives logits [N, 10], as the classifier
// examples' `--export DIR` writes it (then `symflow export DIR/model.json MODEL.onnx --params
// DIR/model.safetensors`). The images are standardised with the training split's statistics, as
// those examples do; give the same --limit for the same statistics.
// --reference DIR checks the import first: on DIR's test batch the imported model must give the
// exported graph's outputs bit for bit, and the typed model's logits within rounding.
// --checkpoint PATH saves the parameters and Adam's state after each epoch and resumes from PATH
// when it exists; --stop-after N ends after epoch N as if interrupted (the schedule spans --epochs).
// Prints train_loss_before=, train_loss_after=, test_accuracy_before= and test_accuracy=; exits 3
// when a reference check fails and 4 when the training loss did not fall.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <symflow/data/mnist.hpp>
#include <symflow/data/normalize.hpp>
#include <symflow/io/json.hpp>
#include <symflow/io/npy.hpp>
#include <symflow/io/onnx.hpp>
#include <symflow/runtime/onnx_import.hpp>
#include <symflow/train/all.hpp>
#include <symflow/train/checkpoint.hpp>
#include <symflow/train/graph_training.hpp>

#include "command_line.hpp"

using namespace symflow;

namespace {

struct flags {
  std::string model, out, data = std::string(fashion_mnist_directory), checkpoint, reference;
  std::size_t epochs = 1, batch = 64, limit = all_examples, stop_after = 0;
  double learning_rate = 1e-4;
};

// The command line (CLI11): nullopt after --help, which prints the help.
std::optional<flags> parse(int argc, char** argv) {
  flags f;
  CLI::App app{"Fine-tunes a classifier read from ONNX on Fashion-MNIST and exports it again (docs/onnx.md).",
               argv[0]};
  app.add_option("MODEL", f.model, "the ONNX model (.onnx)")->required();
  app.add_option("--out", f.out, "write the fine-tuned model there as ONNX")->type_name("OUT.onnx");
  app.add_option("--data", f.data, "the folder of the Fashion-MNIST .gz files")->capture_default_str();
  app.add_option("--checkpoint", f.checkpoint, "saved after every epoch; resumed from when it exists")
      ->type_name("PATH");
  app.add_option("--reference", f.reference, "compare the imported model's logits with these (.npy)")
      ->type_name("PATH");
  app.add_option("--epochs", f.epochs, "passes over the training set")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--batch", f.batch, "examples per step")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--limit", f.limit, "train and test on the first N examples")->type_name("N")->check(CLI::PositiveNumber);
  app.add_option("--stop-after", f.stop_after, "end after epoch N as if interrupted")->type_name("N")->check(CLI::PositiveNumber);
  app.add_option("--lr", f.learning_rate, "Adam's learning rate")->capture_default_str()->check(CLI::PositiveNumber);
  app.footer("Examples:\n  onnx_fine_tune model.onnx --epochs 1 --out tuned.onnx\n");
  if (!examples::parse_command_line(app, argc, argv)) {
    std::cout << app.help();
    return std::nullopt;
  }
  return f;
}

runtime_feeds feeds_of(const std::string& input, const image_batch& b) {
  runtime_feeds feeds;
  feeds.insert_or_assign(input, runtime_tensor(b.images));
  feeds.insert_or_assign("labels", runtime_tensor(b.labels));
  return feeds;
}

// How many rows of logits [N, K] have their maximum at the label (train/metrics.hpp's rule).
std::size_t correct(const runtime_tensor& logits, const tensor<std::int32_t, shape<dyn>>& labels) {
  if (logits.rank() != 2) throw shape_error("the model's output is " + logits.type_string() + ", not logits [N, K]");
  const tensor_view<const float, shape<dyn, dyn>> rows(logits.data<float>(), {logits.extents()[0], logits.extents()[1]});
  return correct_predictions(rows, labels);
}

double test_accuracy(const interpreter& logits, const std::string& input, const image_split& test, const params& weights) {
  const batch_plan plan(test.size(), 1000);
  image_batch b;
  std::size_t right = 0;
  for (std::size_t i = 0; i < plan.batch_count(); ++i) {
    load_batch(test, plan, i, b);
    runtime_feeds feeds;
    feeds.insert_or_assign(input, runtime_tensor(b.images));
    right += correct(logits.run(feeds, &weights).at(0), b.labels);
  }
  return test.size() ? double(right) / double(test.size()) : 0.0;
}

double mean_loss(const interpreter& loss, const std::string& input, const image_split& train, const params& weights) {
  const batch_plan plan(train.size(), 1000);
  image_batch b;
  double total = 0;
  for (std::size_t i = 0; i < plan.batch_count(); ++i) {
    load_batch(train, plan, i, b);
    total += double(loss.run(feeds_of(input, b), &weights).at(0).data<float>()[0]) * double(b.labels.size());
  }
  return total / double(train.size());
}

// The --reference checks: the imported model against the exported graph (bit for bit) and against
// the typed model's logits (within float rounding of a differently ordered sum).
bool matches_reference(const graph& imported, const params& weights, const std::string& input, const std::filesystem::path& dir) {
  runtime_feeds feeds;
  feeds.insert_or_assign(input, runtime_tensor(load_npy((dir / "test_images.npy").string())));
  const graph_tensor got = run_graph(imported, feeds, &weights).at(0).to_graph_tensor();
  const params exported_weights = load_checkpoint((dir / "model.safetensors").string()).tensors;
  const graph exported = load_graph_json_file((dir / "model.json").string());
  const graph_tensor want = run_graph(exported, feeds, &exported_weights).at(0).to_graph_tensor();
  const bool bitwise = got == want;
  const runtime_tensor typed(load_npy((dir / "test_logits.npy").string()));
  const runtime_tensor mine(got);
  double worst = 0;
  bool close = typed.extents() == mine.extents();
  for (std::size_t i = 0; close && i < typed.size(); ++i) {
    const double a = typed.data<float>()[i], b = mine.data<float>()[i];
    worst = std::max(worst, std::abs(a - b));
    close = std::abs(a - b) <= 1e-4 * std::max(1.0, std::abs(a));
  }
  std::printf("round_trip=%s typed_max_difference=%.3g\n", bitwise ? "bitwise" : "DIFFERS", worst);
  return bitwise && close;
}

int run(int argc, char** argv) {
  const std::optional<flags> parsed = parse(argc, argv);
  if (!parsed) return 0;
  const flags& f = *parsed;
  graph model = load_onnx(f.model);
  if (model.inputs.size() != 1 || model.outputs.size() != 1)
    throw value_error(f.model + ": the model must take one input (images [N, 784]) and give one output (logits)");
  const std::string input = model.inputs[0].name;
  params weights = parameter_values(model);
  const std::vector<std::string> names = parameter_names(model);
  std::cerr << f.model << ": " << names.size() << " parameters, " << model.nodes.size() << " nodes, input '" << input << "'\n";
  if (!f.reference.empty() && !matches_reference(model, weights, input, f.reference)) return 3;

  if (!std::filesystem::exists(f.data)) {
    std::cerr << "no data set at '" << f.data << "' (install Debian's dataset-fashion-mnist, or pass --data DIR)\n";
    return 77;
  }
  image_dataset data = fashion_mnist(f.data, {.train_limit = f.limit, .test_limit = f.limit});
  const standardization s = statistics_of(data.train.images);
  standardize(data.train.images, s);
  standardize(data.test.images, s);

  // The loss, built onto the imported graph: mean softmax cross-entropy against integer labels.
  graph_builder b(model);
  const graph_handle labels = b.input("labels", dtype::i32, {unknown_extent});
  const graph_handle batch_logits = b.handle(b.outputs().at(0).id);
  const graph loss_graph = b.build({classification_loss(batch_logits, labels), batch_logits});
  graph_training_step step(loss_graph, names);
  const interpreter logits(model), loss(loss_graph);

  const std::size_t batches = batch_plan(data.train.size(), f.batch).batch_count();
  const adam optimizer({.learning_rate = cosine_decay(f.learning_rate, std::max<std::uint64_t>(f.epochs * batches, 1))});
  params state = optimizer.initial_state(weights, names);
  std::size_t first_epoch = 0;
  if (!f.checkpoint.empty() && std::filesystem::exists(f.checkpoint)) {
    const checkpoint c = load_checkpoint(f.checkpoint);
    weights = c.part("model/");
    state = c.part("optimizer/");
    first_epoch = std::stoull(c.metadata.at("epoch"));
    std::cerr << "resuming from " << f.checkpoint << " after epoch " << first_epoch << "\n";
  }

  const double loss_before = mean_loss(loss, input, data.train, weights);
  std::printf("train_loss_before=%.4f test_accuracy_before=%.4f\n", loss_before, test_accuracy(logits, input, data.test, weights));
  std::fflush(stdout);
  image_batch batch;
  const std::size_t last_epoch = f.stop_after ? std::min(f.stop_after, f.epochs) : f.epochs;
  for (std::size_t epoch = first_epoch; epoch < last_epoch; ++epoch) {
    const batch_plan plan(data.train.size(), f.batch, epoch_seed(7, epoch));
    epoch_progress progress("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(f.epochs), plan.batch_count());
    running_mean epoch_loss;
    std::size_t seen = 0, right = 0;
    for (std::size_t k = 0; k < plan.batch_count(); ++k) {
      load_batch(data.train, plan, k, batch);
      epoch_loss.add(step.run(feeds_of(input, batch), weights), double(batch.labels.size()));
      right += correct(step.output(1), batch.labels);  // before the update, as the loss
      optimizer.step(weights, state, step.gradients());
      seen += batch.labels.size();
      progress.update(k + 1, seen, epoch_loss.mean(), double(right) / double(seen));
    }
    (void)progress.finish();
    if (!f.checkpoint.empty())
      save_checkpoint(f.checkpoint, {{"model/", weights}, {"optimizer/", state}},
                      {{"model", f.model}, {"optimizer", "adam"}, {"epoch", std::to_string(epoch + 1)}});
  }
  const double loss_after = mean_loss(loss, input, data.train, weights);
  std::printf("train_loss_after=%.4f\n", loss_after);
  if (!f.out.empty()) {
    save_onnx(model, f.out, &weights);
    std::cerr << "wrote " << f.out << "\n";
  }
  std::printf("test_accuracy=%.4f\n", test_accuracy(logits, input, data.test, weights));
  return loss_after < loss_before ? 0 : 4;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 1;
  }
}
