// W3: the gradient of sum(log(1 + exp(-y * (w * x + b)))) with respect to w (a vector) and b (a
// scalar), N = 2^24, float32. symflow evaluates the loss and both gradients in one fused pass.
#include <benchmark/benchmark.h>

#include <random>
#include <symflow/symflow.hpp>
#include <vector>

#include "gradient_hand.hpp"

namespace {
using namespace symflow;
constexpr std::size_t n = std::size_t(1) << 24;
using vec = tensor<float, shape<dyn>>;

struct data {
  vec x{extents_t<1>{n}, 0.f}, y{extents_t<1>{n}, 0.f}, w{extents_t<1>{n}, 0.f};
  tensor<float, shape<>> b{0.1f};
  data() {
    std::mt19937 rng(42);
    std::normal_distribution<float> normal;
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = normal(rng);
      y[i] = normal(rng) > 0 ? 1.f : -1.f;
      w[i] = 0.1f * normal(rng);
    }
  }
};
data& inputs() {
  static data d;
  return d;
}

auto xs = placeholder<"x", float, shape<dyn>>();
auto ys = placeholder<"y", float, shape<dyn>>();
auto ws = variable<"w", float, shape<dyn>>();
auto bs = variable<"b", float, shape<>>();
auto loss = sum(log(1 + exp(-ys * (ws * xs + bs))));

// Bytes a one-pass gradient moves: x, y, w read, dw written.
void set_counters(benchmark::State& state) {
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(4 * n * sizeof(float)));
}

void BM_W3_symflow(benchmark::State& state) {
  auto& d = inputs();
  auto [dw, db] = grad(loss, ws, bs);
  tensor<float, shape<>> l, gb;
  vec gw(extents_t<1>{n}, 0.f);
  for (auto _ : state) {
    eval_into(std::tie(l, gw, gb), loss, dw, db, xs = d.x, ys = d.y, ws = d.w, bs = d.b);
    benchmark::DoNotOptimize(gw.data());
  }
  set_counters(state);
}

void BM_W3_forward(benchmark::State& state) {
  auto& d = inputs();
  tensor<float, shape<>> l;
  for (auto _ : state) {
    eval_into(l, loss, xs = d.x, ys = d.y, ws = d.w, bs = d.b);
    benchmark::DoNotOptimize(l.data());
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(3 * n * sizeof(float)));
}

void BM_W3_handwritten(benchmark::State& state) {
  auto& d = inputs();
  vec gw(extents_t<1>{n}, 0.f);
  for (auto _ : state) {
    auto r = w3::handwritten(d.x.data(), d.y.data(), d.w.data(), d.b[0], gw.data(), n);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(gw.data());
  }
  set_counters(state);
}

// Eager style: one temporary per op, forward then backward, as an interpreter without fusion runs.
void BM_W3_naive(benchmark::State& state) {
  auto& d = inputs();
  std::vector<float> t(n), e(n), gw(n);
  for (auto _ : state) {
    const float b = d.b[0];
    for (std::size_t i = 0; i < n; ++i) t[i] = d.w[i] * d.x[i];
    for (std::size_t i = 0; i < n; ++i) t[i] = t[i] + b;
    for (std::size_t i = 0; i < n; ++i) t[i] = -d.y[i] * t[i];
    for (std::size_t i = 0; i < n; ++i) e[i] = std::exp(t[i]);
    double loss = 0;
    for (std::size_t i = 0; i < n; ++i) loss += std::log1p(e[i]);
    for (std::size_t i = 0; i < n; ++i) t[i] = e[i] / (1 + e[i]);
    for (std::size_t i = 0; i < n; ++i) t[i] = -t[i] * d.y[i];
    for (std::size_t i = 0; i < n; ++i) gw[i] = t[i] * d.x[i];
    double db = 0;
    for (std::size_t i = 0; i < n; ++i) db += t[i];
    benchmark::DoNotOptimize(loss);
    benchmark::DoNotOptimize(db);
    benchmark::DoNotOptimize(gw.data());
  }
  set_counters(state);
}
}  // namespace

BENCHMARK(BM_W3_symflow)->Name("BM_W3/symflow")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_W3_handwritten)->Name("BM_W3/handwritten")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_W3_naive)->Name("BM_W3/naive")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_W3_forward)->Name("BM_W3/symflow_forward_only")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
