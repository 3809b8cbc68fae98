// Data-parallel training (distributed/data_parallel.hpp) under `mpirun -np 2`: every rank trains on
// its shard of each batch and the gradients are summed over the ranks; after 20 steps the
// parameters equal those of one process that trains on the whole batches (computed here on every
// rank, without the communicator) within 1e-5 relative, and after every step all ranks hold the
// same bits (checked by digest). For typed models and runtime graph models, with SGD, momentum and
// Adam, with a batch whose rows do not split evenly, and resumed from a one-process checkpoint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <symflow/data/batches.hpp>
#include <symflow/distributed/data_parallel.hpp>
#include <symflow/ir/to_graph.hpp>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>
#include <symflow/train/checkpoint.hpp>
#include <symflow/train/graph_training.hpp>

using namespace symflow;

namespace {

distributed::communicator* world = nullptr;

constexpr std::size_t features = 13, classes = 5, batch = 37, steps = 20;  // 37 rows: shards of 18 and 19

const auto x = placeholder<"x", float, shape<dyn, features>>();
const auto y = placeholder<"y", std::int32_t, shape<dyn>>();
const auto W1 = variable<"W1", float, shape<features, 32>>();
const auto b1 = variable<"b1", float, shape<32>>();
const auto W2 = variable<"W2", float, shape<32, classes>>();
const auto b2 = variable<"b2", float, shape<classes>>();
const auto logits = matmul(tanh(matmul(x, W1) + b1), W2) + b2;
const auto loss = mean(softmax_cross_entropy(logits, y));
const auto variables = std::tuple{W1, b1, W2, b2};

struct data_set {
  tensor<float, shape<dyn, features>> images;
  tensor<std::int32_t, shape<dyn>> labels;
};

// The same examples on every rank (a fixed seed), with labels a function of the inputs.
data_set make_data() {
  const std::size_t n = batch * 6;
  data_set d{tensor<float, shape<dyn, features>>(extents_t<2>{n, features}), tensor<std::int32_t, shape<dyn>>(extents_t<1>{n})};
  std::mt19937_64 engine(7);
  std::normal_distribution<float> normal;
  for (auto& v : d.images) v = normal(engine);
  for (std::size_t i = 0; i < n; ++i) {
    float s = 0;
    for (std::size_t j = 0; j < features; ++j) s += d.images(i, j) * float(j % 3);
    d.labels(i) = std::int32_t(std::abs(int(s * 2)) % int(classes));
  }
  return d;
}

params initial_model() {
  params p;
  std::mt19937_64 engine(3);
  initialize(p, W1, glorot_uniform{}, engine);
  initialize(p, b1, zeros, engine);
  initialize(p, W2, glorot_uniform{}, engine);
  initialize(p, b2, zeros, engine);
  return p;
}

// The rows of step s's batch: a shuffled plan over the data, one batch per step.
std::vector<std::size_t> batch_rows(std::size_t n, std::size_t step) {
  const batch_plan plan(n, batch, epoch_seed(11, step / (n / batch)));
  const auto rows = plan.batch(step % (n / batch));
  return {rows.begin(), rows.end()};
}

using any_optimizer = std::variant<sgd, momentum, adam>;
any_optimizer make(const std::string& name) {
  if (name == "sgd") return sgd({.learning_rate = 0.2});
  if (name == "momentum") return momentum({.learning_rate = 0.05, .momentum = 0.9});
  return adam({.learning_rate = 0.01});
}

// Steps [first, last) of typed training; with an exchange, on this rank's shard of each batch.
void train_typed(const data_set& d, const any_optimizer& opt, params& model, params& state, std::size_t first,
                 std::size_t last, distributed::gradient_exchange* exchange) {
  auto gradients = std::tuple{tensor<float, shape<features, 32>>{}, tensor<float, shape<32>>{},
                              tensor<float, shape<32, classes>>{}, tensor<float, shape<classes>>{}};
  tensor<float, shape<dyn, features>> images;
  tensor<std::int32_t, shape<dyn>> labels;
  for (std::size_t s = first; s < last; ++s) {
    const std::vector<std::size_t> rows = batch_rows(d.labels.size(), s);
    const distributed::shard mine = exchange ? distributed::shard_of(rows.size(), *world) : distributed::shard{0, rows.size(), rows.size()};
    gather_rows(d.images, mine.of(rows), images);
    gather_rows(d.labels, mine.of(rows), labels);
    std::apply([&](auto&... g) { eval_into(std::tie(g...), grad(loss, W1), grad(loss, b1), grad(loss, W2), grad(loss, b2),
                                           x = images, y = labels, model); }, gradients);
    if (exchange) exchange->sum(gradients, mine.weight());
    std::visit([&](const auto& o) { o.step(model, state, variables, gradients); }, opt);
    if (exchange) {
      distributed::check_replicas(*world, model, "parameters after step " + std::to_string(s));
      distributed::check_replicas(*world, state, "optimiser state after step " + std::to_string(s));
    }
  }
}

// The largest |a - b| / max(|b|, 0.01) over every parameter's elements.
double max_relative_difference(const params& a, const params& b) {
  double worst = 0;
  for (const std::string& name : b.names()) {
    const auto& ea = a.at(name);
    const auto& eb = b.at(name);
    EXPECT_EQ(ea.bytes.size(), eb.bytes.size()) << name;
    const auto* pa = reinterpret_cast<const float*>(ea.bytes.data());
    const auto* pb = reinterpret_cast<const float*>(eb.bytes.data());
    for (std::size_t i = 0; i < eb.bytes.size() / sizeof(float); ++i)
      worst = std::max(worst, double(std::abs(pa[i] - pb[i])) / std::max(double(std::abs(pb[i])), 0.01));
  }
  return worst;
}

class DataParallel : public ::testing::TestWithParam<std::string> {};

TEST_P(DataParallel, TypedModelMatchesOneProcess) {
  ASSERT_EQ(world->size(), 2) << "run under mpirun -np 2";
  const data_set d = make_data();
  const any_optimizer opt = make(GetParam());
  params reference = initial_model();
  params reference_state = std::visit([&](const auto& o) { return o.initial_state(reference, W1, b1, W2, b2); }, opt);
  train_typed(d, opt, reference, reference_state, 0, steps, nullptr);

  // Rank 1 starts from other values: the broadcast makes them rank 0's.
  params model = world->is_root() ? initial_model() : params{};
  distributed::broadcast(*world, model, "initial parameters");
  params state = std::visit([&](const auto& o) { return o.initial_state(model, W1, b1, W2, b2); }, opt);
  distributed::gradient_exchange exchange(*world);
  train_typed(d, opt, model, state, 0, steps, &exchange);
  const double diff = max_relative_difference(model, reference);
  EXPECT_LE(diff, 1e-5) << GetParam();
  EXPECT_GT(max_relative_difference(model, initial_model()), 1e-2) << "the model did not train";
  if (world->is_root()) std::printf("%s: max relative difference to one process %.3g\n", GetParam().c_str(), diff);
}

INSTANTIATE_TEST_SUITE_P(Optimisers, DataParallel, ::testing::Values("sgd", "momentum", "adam"));

// A checkpoint written by one process after 10 steps, read by rank 0 and broadcast, continues on
// two ranks to what one process reaches after 20.
TEST(DataParallelResume, FromAOneProcessCheckpoint) {
  const data_set d = make_data();
  const any_optimizer opt = make("adam");
  params reference = initial_model();
  params reference_state = std::visit([&](const auto& o) { return o.initial_state(reference, W1, b1, W2, b2); }, opt);
  train_typed(d, opt, reference, reference_state, 0, steps, nullptr);

  const std::string path = (std::filesystem::temp_directory_path() / ("symflow-dp-" + std::to_string(::getppid()) + ".safetensors")).string();
  if (world->is_root()) {  // the one-process run that was interrupted
    params model = initial_model();
    params state = std::visit([&](const auto& o) { return o.initial_state(model, W1, b1, W2, b2); }, opt);
    train_typed(d, opt, model, state, 0, steps / 2, nullptr);
    save_checkpoint(path, {{"model/", model}, {"optimizer/", state}}, {{"step", std::to_string(steps / 2)}});
  }
  checkpoint c;
  if (world->is_root()) c = load_checkpoint(path);
  distributed::broadcast(*world, c, "checkpoint");
  EXPECT_EQ(c.metadata.at("step"), std::to_string(steps / 2));
  params model = c.part("model/"), state = c.part("optimizer/");
  distributed::gradient_exchange exchange(*world);
  train_typed(d, opt, model, state, steps / 2, steps, &exchange);
  EXPECT_LE(max_relative_difference(model, reference), 1e-5);
  world->barrier("checkpoint read");
  if (world->is_root()) std::filesystem::remove(path);
}

// A graph value's training step (graph_training_step, named gradients) on two ranks.
TEST(DataParallelGraph, RuntimeModelMatchesOneProcess) {
  const data_set d = make_data();
  const graph g = to_graph(loss);
  const auto train = [&](params& model, distributed::gradient_exchange* exchange) {
    graph_training_step step(g, parameter_names(g));
    const adam opt({.learning_rate = 0.01});
    params state = opt.initial_state(model, step.parameters());
    tensor<float, shape<dyn, features>> images;
    tensor<std::int32_t, shape<dyn>> labels;
    for (std::size_t s = 0; s < steps; ++s) {
      const std::vector<std::size_t> rows = batch_rows(d.labels.size(), s);
      const distributed::shard mine = exchange ? distributed::shard_of(rows.size(), *world) : distributed::shard{0, rows.size(), rows.size()};
      gather_rows(d.images, mine.of(rows), images);
      gather_rows(d.labels, mine.of(rows), labels);
      step.run({{"x", runtime_tensor(images)}, {"y", runtime_tensor(labels)}}, model);
      opt.step(model, state, exchange ? exchange->sum(step.gradients(), mine.weight()) : step.gradients());
      if (exchange) distributed::check_replicas(*world, model, "graph parameters after step " + std::to_string(s));
    }
  };
  params reference = initial_model();
  train(reference, nullptr);
  params model = initial_model();
  distributed::gradient_exchange exchange(*world);
  train(model, &exchange);
  EXPECT_LE(max_relative_difference(model, reference), 1e-5);
}

// Shards: contiguous, covering the batch, sizes within one, weights summing to 1; a batch smaller
// than the number of ranks leaves some shards empty.
TEST(DataParallelShards, CoverTheBatch) {
  for (std::size_t n : {0u, 1u, 2u, 5u, 37u, 128u})
    for (int ranks : {1, 2, 3, 8}) {
      std::size_t next = 0;
      double weight = 0;
      for (int r = 0; r < ranks; ++r) {
        const distributed::shard s = distributed::shard_of(n, r, ranks);
        EXPECT_EQ(s.begin, next);
        EXPECT_LE(s.size(), n / std::size_t(ranks) + 1);
        EXPECT_GE(s.size(), n / std::size_t(ranks));
        next = s.end;
        weight += s.weight();
      }
      EXPECT_EQ(next, n);
      if (n) {
        EXPECT_NEAR(weight, 1.0, 1e-12);
      }
    }
}

// Ranks that send gradients of different sizes are refused on every rank, naming both sizes.
TEST(DataParallelErrors, DifferentModelsAreRefused) {
  distributed::gradient_exchange exchange(*world);
  std::vector<float> values(world->rank() + 3, 1.0f);
  const std::vector<named_gradient> local{{"w", dtype::f32, {values.size()}, values.data()}};
  try {
    (void)exchange.sum(local, 0.5);
    ADD_FAILURE() << "expected distributed_error";
  } catch (const distributed_error& e) {
    EXPECT_NE(std::string(e.what()).find("the ranks must train the same model"), std::string::npos) << e.what();
  }
  // The communicator still works: the refusal happened before any gradient was exchanged.
  std::vector<float> same(4, float(world->rank() + 1));
  const std::vector<named_gradient> ok{{"w", dtype::f32, {same.size()}, same.data()}};
  const auto& summed = exchange.sum(ok, 1.0);
  EXPECT_EQ(static_cast<const float*>(summed[0].data)[3], 3.0f);  // 1 + 2
}

}  // namespace

int main(int argc, char** argv) {
  distributed::communicator communicator(argc, argv, {.timeout_seconds = 60});
  world = &communicator;
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  int any = failed;  // a failure on any rank fails the run on every rank
  std::vector<unsigned char> mine(1, static_cast<unsigned char>(failed != 0));
  const std::vector<unsigned char> all = communicator.allgather(mine, "test results");
  for (unsigned char f : all) any |= f;
  return any ? 1 : 0;
}
