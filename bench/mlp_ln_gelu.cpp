// One training step of the N-layer LN+GELU MLP (784 -> N x 256 -> 10, batch 256): forward, softmax
// cross-entropy, gradients of all 4N+2 parameters, SGD update.
//   BM_hand_ln_gelu_step/N     hand-written (bench/mlp_ln_gelu_hand.cpp: Eigen GEMM + hand loops)
//   BM_symflow_ln_gelu_step/N  symflow, the model of bench/compile/gen_mlp.py N --kind header
//                              (built only with -DSYMFLOW_MLP_BENCH_SYMFLOW=ON, see bench/CMakeLists.txt)
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "mlp_ln_gelu_hand.hpp"

#ifndef SYMFLOW_MLP_BENCH_SYMFLOW
#define SYMFLOW_MLP_BENCH_SYMFLOW 0
#endif

namespace {

constexpr int batch = 256;

// With --benchmark_repetitions=N: the fastest repetition too. On a 2-core machine shared with
// compiles, a 2-thread step whose other thread is descheduled waits at every OpenMP barrier (10-30x
// slower); the minimum is the step's time when both cores were free.
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

struct batch_data {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  explicit batch_data(int input, int classes) {
    std::mt19937_64 engine(7);
    std::normal_distribution<float> normal;
    x.resize(std::size_t(batch) * input);
    for (auto& v : x) v = normal(engine);
    for (int r = 0; r < batch; ++r) y.push_back(std::int32_t(engine() % std::uint64_t(classes)));
  }
};

void BM_hand_ln_gelu_step(benchmark::State& state) {
  const mlp_hand::sizes s{.layers = int(state.range(0)), .input = 784, .width = 256, .classes = 10};
  mlp_hand::parameters<float> p(s);
  p.init(42);
  mlp_hand::trainer<float> t(s, batch);
  const batch_data d(s.input, s.classes);
  float loss = t.sgd_step(p, d.x.data(), d.y.data(), 1e-3f);  // untimed first step
  for (auto _ : state) {
    loss = t.sgd_step(p, d.x.data(), d.y.data(), 1e-3f);
    benchmark::DoNotOptimize(loss);
  }
  state.counters["loss"] = loss;
  state.counters["threads"] = omp_get_max_threads();
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_hand_ln_gelu_step)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", min_of);

}  // namespace

// ---------------------------------------------------------------------------------------------
// symflow side: the same step written with symflow (model from gen_mlp.py's header, generated at
// build time into the build folder). Enabled by the lead once the core compiles the 4-layer model:
// cmake -DSYMFLOW_MLP_BENCH_SYMFLOW=ON.
// ---------------------------------------------------------------------------------------------
#if SYMFLOW_MLP_BENCH_SYMFLOW
#include "mlp_ln_gelu_4.hpp"

namespace {

void BM_symflow_ln_gelu_step(benchmark::State& state) {
  namespace m = mlp_ln_gelu_4;
  static_assert(m::layers == 4, "bench/mlp_ln_gelu.cpp: the generated header must be the 4-layer model");
  symflow::params model;
  m::init_params(model, 42);
  const symflow::sgd opt({.learning_rate = 1e-3});
  symflow::params opt_state = m::initial_state(opt, model);
  const batch_data d(int(m::input), int(m::classes));
  m::input_tensor xv(symflow::extents_t<2>{std::size_t(batch), m::input}, 0.f);
  m::label_tensor yv(symflow::extents_t<1>{std::size_t(batch)}, 0);
  std::copy(d.x.begin(), d.x.end(), xv.data());
  std::copy(d.y.begin(), d.y.end(), yv.data());
  float loss = m::train_step(model, opt_state, opt, xv, yv);  // untimed first step
  for (auto _ : state) {
    loss = m::train_step(model, opt_state, opt, xv, yv);
    benchmark::DoNotOptimize(loss);
  }
  state.counters["loss"] = loss;
  state.counters["threads"] = omp_get_max_threads();
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_symflow_ln_gelu_step)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", min_of);

}  // namespace
#endif

BENCHMARK_MAIN();
