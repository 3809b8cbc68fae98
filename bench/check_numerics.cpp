// What check_numerics costs when nothing is wrong, measured in one run: W1 and W2 (2^24 float32,
// fused passes that carry the detection) and one SGD step of an MLP 784-1024(relu)-10 with softmax
// cross-entropy (batch 256), each with the switch off and on. bench_check_numerics_nofused is the
// same program built with the detection taken out of the fused loops (SYMFLOW_FUSED_NUMERICS_CHECK=0),
// to show what carrying it costs when the switch is off.
#include <benchmark/benchmark.h>

#include <random>

#include <symflow/symflow.hpp>
#include <symflow/train/optimizers.hpp>

using namespace symflow;

namespace {

constexpr std::size_t n = std::size_t(1) << 24;
auto pa = placeholder<"a", float, shape<dyn>>();
auto pb = placeholder<"b", float, shape<dyn>>();
auto pc = placeholder<"c", float, shape<dyn>>();
auto pd = placeholder<"d", float, shape<dyn>>();

struct vectors {
  tensor<float, shape<dyn>> a, b, c, d, out;
  vectors() {
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto* t : {&a, &b, &c, &d, &out}) {
      *t = tensor<float, shape<dyn>>(extents_t<1>{n}, uninitialized);
      for (std::size_t i = 0; i < n; ++i) t->data()[i] = u(rng);
    }
  }
};
vectors& data() {
  static vectors v;
  return v;
}

template <class Expr>
void run_map(benchmark::State& state, const Expr& e, bool check) {
  auto& s = data();
  check_numerics_scope scope(check);
  for (auto _ : state) {
    eval_into(s.out, e, pa = s.a, pb = s.b, pc = s.c, pd = s.d);
    benchmark::ClobberMemory();
  }
}
void w1(benchmark::State& state) { run_map(state, pa * pb + pc * sin(pd), state.range(0) != 0); }
void w2(benchmark::State& state) {
  run_map(state, tanh(pa * pb + pc) * exp(-pd * pd) + 0.5f * pa, state.range(0) != 0);
}

void mlp_sgd_step(benchmark::State& state) {
  constexpr std::size_t batch = 256;
  auto x = placeholder<"x", float, shape<dyn, 784>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W1 = variable<"W1", float, shape<784, 1024>>();
  auto b1 = variable<"b1", float, shape<1024>>();
  auto W2 = variable<"W2", float, shape<1024, 10>>();
  auto b2 = variable<"b2", float, shape<10>>();
  auto logits = matmul(relu(matmul(x, W1) + b1), W2) + b2;
  auto loss = -mean(sum(log_softmax(logits) * one_hot<10>(y), axes<1>));
  auto [dW1, db1, dW2, db2] = grad(loss, W1, b1, W2, b2);

  std::mt19937 rng(2);
  std::normal_distribution<float> n01;
  auto fill = [&](auto& t, float scale) {
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = scale * n01(rng);
  };
  params model;
  tensor<float, shape<784, 1024>> w1;
  tensor<float, shape<1024>> v1;
  tensor<float, shape<1024, 10>> w2;
  tensor<float, shape<10>> v2;
  fill(w1, 0.05f), fill(v1, 0.f), fill(w2, 0.05f), fill(v2, 0.f);
  model.set("W1", w1), model.set("b1", v1), model.set("W2", w2), model.set("b2", v2);
  tensor<float, shape<dyn, 784>> images(extents_t<2>{batch, 784}, uninitialized);
  fill(images, 1.f);
  tensor<std::int32_t, shape<dyn>> labels(extents_t<1>{batch}, 0);
  for (std::size_t i = 0; i < batch; ++i) labels[i] = std::int32_t(i % 10);

  const sgd optimizer({.learning_rate = 0.01});
  params opt_state = optimizer.initial_state(model, W1, b1, W2, b2);
  tensor<float, shape<>> L;
  tensor<float, shape<784, 1024>> g1;
  tensor<float, shape<1024>> gb1;
  tensor<float, shape<1024, 10>> g2;
  tensor<float, shape<10>> gb2;
  check_numerics_scope scope(state.range(0) != 0);
  for (auto _ : state) {
    eval_into(std::tie(L, g1, gb1, g2, gb2), loss, dW1, db1, dW2, db2, x = images, y = labels, model);
    optimizer.step(model, opt_state, std::tie(W1, b1, W2, b2), std::tie(g1, gb1, g2, gb2));
    benchmark::ClobberMemory();
  }
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

}  // namespace

BENCHMARK(w1)->Name("BM_W1/check_numerics")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", min_of);
BENCHMARK(w2)->Name("BM_W2/check_numerics")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", min_of);
BENCHMARK(mlp_sgd_step)->Name("BM_MLP_SGD_step/check_numerics")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", min_of);
BENCHMARK_MAIN();
