// W4 on the CPU: one SGD step (lr 0.05) of the MLP 784-1024(relu)-10 with softmax cross-entropy on
// integer labels, at batch 1, 16 and 256.
//   BM_W4_symflow/B        nn::trainer with sgd (what a user writes): the loss, the bias
//                          gradients and -lr x^T g added into the weights in one evaluation
//                          (eval/cpu/accumulate.hpp), then the biases' update
//   BM_W4_symflow_kept/B   the same with trainer_options::keep_gradients: every gradient stored,
//                          then the optimiser's pass over each
//   BM_W4_adam/B, BM_W4_adam_kept/B  the same two with Adam (lr 1e-3): the weights' update runs
//                          over each block of rows of their gradient's product as it is computed,
//                          or over the stored gradients
//   BM_W4_hand/B           the same step by hand with Eigen matrices (bench/training_hand.cpp)
//   BM_W4_hand_accumulate/B  the hand step with the weight updates inside the gradient GEMMs
//   BM_W4_gemms/B          the step's five GEMMs alone: the matrix-product floor on this machine
//   BM_MLP256_symflow/B, BM_MLP256_hand/B  the same with 256 hidden units (the examples' MLP) at
//                          batch 1, 16 and 128: the step's fixed cost
// Floor counters: `gemm_floor_ms` is BM_W4_gemms' time; `bytes_floor_ms` the elementwise traffic the
// step cannot avoid (read x, W1 once for the forward GEMM, read and write W1 for the update)
// over the copy bandwidth measured by BM_copy.
//
//   bench_training --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <symflow/nn/trainer.hpp>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>

#include "training_hand.hpp"

namespace {
using namespace symflow;

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

constexpr float learning_rate = 0.05f;

struct batch_data {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  explicit batch_data(int batch) {
    std::mt19937_64 engine(7);
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    x.resize(std::size_t(batch) * w4_hand::inputs);
    for (auto& v : x) v = pixel(engine);
    for (int r = 0; r < batch; ++r) y.push_back(std::int32_t(engine() % w4_hand::classes));
  }
};

template <std::size_t Hidden>
struct mlp_model {
  placeholder<"x", float, shape<dyn, 784>> x;
  placeholder<"y", std::int32_t, shape<dyn>> y;
  variable<"W1", float, shape<784, Hidden>> W1;
  variable<"b1", float, shape<Hidden>> b1;
  variable<"W2", float, shape<Hidden, 10>> W2;
  variable<"b2", float, shape<10>> b2;
  auto loss() const {
    auto h = scope("dense1", [&] { return relu(matmul(x, W1) + b1); });
    auto logits = scope("dense2", [&] { return matmul(h, W2) + b2; });
    return mean(softmax_cross_entropy(logits, y));
  }
};

params store_of(const w4_hand::parameters& p) {
  params store;
  auto put = [&](const char* name, const std::vector<float>& v, auto extents) {
    tensor<float, dyn_shape<std::tuple_size_v<decltype(extents)>>> t(extents, 0.0f);
    std::copy(v.begin(), v.end(), t.data());
    store.set(name, t);
  };
  const auto hidden = std::size_t(p.hidden);
  put("W1", p.W1, extents_t<2>{784, hidden});
  put("b1", p.b1, extents_t<1>{hidden});
  put("W2", p.W2, extents_t<2>{hidden, 10});
  put("b2", p.b2, extents_t<1>{10});
  return store;
}

void set_counters(benchmark::State& state, int batch, int hidden, double loss) {
  state.counters["loss"] = loss;
  state.counters["threads"] = omp_get_max_threads();
  state.SetItemsProcessed(state.iterations() * batch);
  // Multiply-adds of the five GEMMs: x W1, h W2, dlogits W2^T, h^T dlogits, x^T dh.
  const double flops = 2.0 * batch * (2.0 * 784 * hidden + 3.0 * hidden * 10);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

template <std::size_t Hidden, class Optimizer = sgd>
void symflow_step(benchmark::State& state, bool keep_gradients = false,
                  Optimizer optimizer = sgd({.learning_rate = learning_rate})) {
  const int batch = int(state.range(0));
  const mlp_model<Hidden> m;
  w4_hand::parameters p{int(Hidden)};
  p.init(42);
  const batch_data d(batch);
  tensor<float, shape<dyn, 784>> x(extents_t<2>{std::size_t(batch), 784}, 0.0f);
  tensor<std::int32_t, shape<dyn>> y(extents_t<1>{std::size_t(batch)}, 0);
  std::copy(d.x.begin(), d.x.end(), x.data());
  std::copy(d.y.begin(), d.y.end(), y.data());
  nn::trainer train(m.loss(), std::tuple{m.W1, m.b1, m.W2, m.b2}, optimizer, store_of(p),
                    {.keep_gradients = keep_gradients});
  double loss = train.step(m.x = x, m.y = y);  // untimed first step
  for (auto _ : state) {
    loss = train.step(m.x = x, m.y = y);
    benchmark::DoNotOptimize(loss);
  }
  set_counters(state, batch, int(Hidden), loss);
}
void BM_W4_symflow(benchmark::State& state) { symflow_step<1024>(state); }
void BM_W4_symflow_kept(benchmark::State& state) { symflow_step<1024>(state, true); }
void BM_MLP256_symflow(benchmark::State& state) { symflow_step<256>(state); }
void BM_W4_adam(benchmark::State& state) { symflow_step<1024>(state, false, adam({.learning_rate = 1e-3})); }
void BM_W4_adam_kept(benchmark::State& state) { symflow_step<1024>(state, true, adam({.learning_rate = 1e-3})); }

void hand_step(benchmark::State& state, int hidden, bool accumulate) {
  const int batch = int(state.range(0));
  w4_hand::parameters p(hidden);
  p.init(42);
  w4_hand::trainer t(batch, hidden);
  const batch_data d(batch);
  float loss = t.sgd_step(p, d.x.data(), d.y.data(), learning_rate, accumulate);
  for (auto _ : state) {
    loss = t.sgd_step(p, d.x.data(), d.y.data(), learning_rate, accumulate);
    benchmark::DoNotOptimize(loss);
  }
  set_counters(state, batch, hidden, loss);
}
void BM_W4_hand(benchmark::State& state) { hand_step(state, 1024, false); }
void BM_W4_hand_accumulate(benchmark::State& state) { hand_step(state, 1024, true); }
void BM_MLP256_hand(benchmark::State& state) { hand_step(state, 256, false); }
void BM_MLP256_hand_accumulate(benchmark::State& state) { hand_step(state, 256, true); }

void BM_W4_gemms(benchmark::State& state) {
  const int batch = int(state.range(0));
  w4_hand::parameters p(1024);
  p.init(42);
  const batch_data d(batch);
  std::vector<float> h(std::size_t(batch) * 1024), logits(std::size_t(batch) * 10), dW1(784 * 1024), dW2(1024 * 10);
  for (auto _ : state) {
    w4_hand::gemms_only(batch, 1024, d.x.data(), p, h, logits, dW1, dW2);
    benchmark::DoNotOptimize(dW1.data());
  }
  set_counters(state, batch, 1024, 0);
}

// Copy bandwidth over W1's size (3.2 MB: what the update streams through); bytes counted read + write.
void BM_copy(benchmark::State& state) {
  std::vector<float> a(784 * 1024, 1.0f), b(784 * 1024);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), a.size() * sizeof(float));
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * std::int64_t(2 * a.size() * sizeof(float)));
}

#define W4_ARGS ->Arg(1)->Arg(16)->Arg(256)->Unit(benchmark::kMicrosecond)->UseRealTime()->ComputeStatistics("min", min_of)
BENCHMARK(BM_W4_symflow) W4_ARGS;
BENCHMARK(BM_W4_symflow_kept) W4_ARGS;
BENCHMARK(BM_W4_adam) W4_ARGS;
BENCHMARK(BM_W4_adam_kept) W4_ARGS;
BENCHMARK(BM_W4_hand) W4_ARGS;
BENCHMARK(BM_W4_hand_accumulate) W4_ARGS;
BENCHMARK(BM_W4_gemms) W4_ARGS;
// The examples' MLP (784-256-10): its step at batch 1 and 16 shows the fixed cost per step.
#define MLP_ARGS ->Arg(1)->Arg(16)->Arg(128)->Unit(benchmark::kMicrosecond)->UseRealTime()->ComputeStatistics("min", min_of)
BENCHMARK(BM_MLP256_symflow) MLP_ARGS;
BENCHMARK(BM_MLP256_hand) MLP_ARGS;
BENCHMARK(BM_MLP256_hand_accumulate) MLP_ARGS;
BENCHMARK(BM_copy)->UseRealTime()->ComputeStatistics("min", min_of);

}  // namespace

BENCHMARK_MAIN();
