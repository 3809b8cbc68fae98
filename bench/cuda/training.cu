// W3 and W4 on the GPU, timed with CUDA events (Google Benchmark, manual time).
//
// W3 (training_w3.cu): the loss sum(log(1 + exp(-y * (w * x + b)))) and its gradients, one evaluation
//     against a hand-written fused kernel.
// W4: one SGD step of an MLP 784-1024(relu)-10 with softmax cross-entropy on integer labels: forward,
//     symbolic gradients grad(loss, W1, b1, W2, b2) and the update W <- W - lr * dW of all four
//     parameters in place, as one cuda::eval_into on device buffers; uncaptured, and captured once
//     as a CUDA graph and replayed; cuBLAS in FP32 and with TF32 tensor cores; batch 256 and 4096.
//
//   bench_cuda_training --benchmark_repetitions=8 --benchmark_report_aggregates_only=true
//   bench_cuda_training --profile-step=256[,tf32][,graph]   one step between cudaProfilerStart/Stop
//                                                          (for ncu/nsys --profile-from-start off)
#include <benchmark/benchmark.h>
#include <cuda_profiler_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <symflow/cuda.hpp>
#include <symflow/ops/all.hpp>
#include <symflow/symbolic/gradient.hpp>

#include "../../tests/cuda/training_model.hpp"
#include "timing.cuh"

namespace {
using namespace symflow;

// ---- W4 -------------------------------------------------------------------------------------------

const symflow_cuda_test::training::mlp_model mlp;
const auto mlp_loss = mlp.loss();
const auto mlp_grads = mlp.gradients();
constexpr float learning_rate = 0.05f;

__global__ void random_labels(std::int32_t* y, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned v = unsigned(i) * 747796405u + seed * 2891336453u;
    v ^= v >> 13;
    v *= 0x5bd1e995u;
    v ^= v >> 15;
    y[i] = std::int32_t(v % 10u);
  }
}

// One training setup: parameters in a device store, a batch in device buffers, a created stream
// (graph capture needs one).
struct mlp_setup {
  cuda::stream s;
  cuda::device_params store;
  cuda::device_tensor<float, shape<dyn, 784>> x;
  cuda::device_tensor<std::int32_t, shape<dyn>> y;
  bool tf32;
  mlp_setup(std::size_t batch, bool allow_tf32) : tf32(allow_tf32) {
    store.set("W1", tensor<float, shape<784, 1024>>(extents_t<2>{784, 1024}, 0.f), s);
    store.set("b1", tensor<float, shape<1024>>(extents_t<1>{1024}, 0.f), s);
    store.set("W2", tensor<float, shape<1024, 10>>(extents_t<2>{1024, 10}, 0.f), s);
    store.set("b2", tensor<float, shape<10>>(extents_t<1>{10}, 0.f), s);
    auto init = [&](const char* name, std::size_t n, unsigned seed, float scale) {
      random_fill<<<256, 256, 0, s.get()>>>(static_cast<float*>(store.at(name).bytes.data()), n, seed, -scale, scale);
    };
    init("W1", 784 * 1024, 11, 1.0f / 28.0f);
    init("b1", 1024, 12, 0.01f);
    init("W2", 1024 * 10, 13, 1.0f / 32.0f);
    init("b2", 10, 14, 0.01f);
    x = cuda::device_tensor<float, shape<dyn, 784>>(extents_t<2>{batch, 784}, s);
    y = cuda::device_tensor<std::int32_t, shape<dyn>>(extents_t<1>{batch}, s);
    random_fill<<<1024, 256, 0, s.get()>>>(x.data(), x.size(), 15, 0.0f, 1.0f);
    random_labels<<<64, 256, 0, s.get()>>>(y.data(), batch, 16);
    s.synchronize();
  }
  void step() {
    const auto& [dW1, db1, dW2, db2] = mlp_grads;
    cuda::eval_into(std::tuple{store.view<float, shape<784, 1024>>("W1"), store.view<float, shape<1024>>("b1"),
                               store.view<float, shape<1024, 10>>("W2"), store.view<float, shape<10>>("b2")},
                    mlp.W1 - learning_rate * dW1, mlp.b1 - learning_rate * db1, mlp.W2 - learning_rate * dW2,
                    mlp.b2 - learning_rate * db2, cuda::feed(mlp.x, x), cuda::feed(mlp.y, y), store,
                    cuda::options{s, tf32});
  }
  float loss() {
    return cuda::eval(mlp_loss, cuda::feed(mlp.x, x), cuda::feed(mlp.y, y), store, cuda::options{s, tf32}).to_host(s)[0];
  }
};

void BM_W4(benchmark::State& state, std::size_t batch, bool graph, bool tf32) {
  mlp_setup m(batch, tf32);
  m.step();  // creates the cuBLAS handle and fills the pool outside any capture
  m.s.synchronize();
  std::optional<cuda::graph> g;
  g.emplace(cuda::graph::capture(m.s, [&] { m.step(); }));
  state.counters["graph_nodes"] = double(g->node_count());
  if (graph) {
    time_launches(state, m.s.get(), [&] { g->launch(m.s); });
  } else {
    time_launches(state, m.s.get(), [&] { m.step(); });
  }
  // Forward + the gradients' GEMMs as symflow runs them (16, see docs/benchmarks.md) per step.
  const double flops = 2.0 * double(batch) * (784.0 * 1024 * 5 + 1024.0 * 10 * 9);
  state.counters["TFLOP/s"] = benchmark::Counter(flops * double(state.iterations()) / 1e12, benchmark::Counter::kIsRate);
}

// An uncaptured step with check_numerics off and on (a captured step is never checked: reading the
// flag back would synchronise inside the capture). On, the five outputs' kernels accumulate the flag,
// and the step ends with one flag read (a wait for the GPU).
void BM_W4_check_numerics(benchmark::State& state, std::size_t batch, bool checked) {
  mlp_setup m(batch, true);
  check_numerics_scope check(checked);
  m.step();
  m.s.synchronize();
  time_launches(state, m.s.get(), [&] { m.step(); });
}

// Training runs: the loss on a fixed batch falls over 100 steps (graph replays).
void verify_w4() {
  for (const bool tf32 : {false, true}) {
    mlp_setup m(256, tf32);
    m.step();
    const float before = m.loss();
    const cuda::graph g = cuda::graph::capture(m.s, [&] { m.step(); });
    for (int k = 0; k < 100; ++k) g.launch(m.s);
    const float after = m.loss();
    std::printf("check W4 (batch 256, TF32 %s): loss %.4f after 1 step, %.4f after 101 (graph node count %zu)\n",
                tf32 ? "on" : "off", before, after, g.node_count());
  }
}

int profile_one_step(const std::string& spec) {
  const std::size_t batch = std::stoul(spec);
  const bool tf32 = spec.find("tf32") != std::string::npos, graph = spec.find("graph") != std::string::npos;
  mlp_setup m(batch, tf32);
  for (int k = 0; k < 3; ++k) m.step();
  const cuda::graph g = cuda::graph::capture(m.s, [&] { m.step(); });
  g.launch(m.s);
  m.s.synchronize();
  SYMFLOW_CUDA_CHECK(cudaProfilerStart());
  if (graph) g.launch(m.s);
  else m.step();
  m.s.synchronize();
  SYMFLOW_CUDA_CHECK(cudaProfilerStop());
  std::printf("profiled one step: batch %zu, TF32 %s, %s\n", batch, tf32 ? "on" : "off", graph ? "graph" : "uncaptured");
  return 0;
}
}  // namespace

void verify_w3();  // training_w3.cu

int main(int argc, char** argv) {
  if (!cuda::device_available()) {
    std::printf("bench_cuda_training: %s\n", cuda::device_description().c_str());
    return 0;
  }
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--profile-step=", 15) == 0) return profile_one_step(argv[i] + 15);
    if (std::strncmp(argv[i], "--kernel-profile=", 17) == 0) {  // the backend's per-group profile of 10 steps
      mlp_setup m(std::stoul(argv[i] + 17), true);
      m.step();
      m.s.synchronize();
      cuda::reset_profile();
      {
        cuda::profiling_scope on;
        for (int k = 0; k < 10; ++k) m.step();
      }
      std::printf("10 uncaptured steps, batch %s, TF32:\n%s", argv[i] + 17, cuda::profile().slowest(15).c_str());
      return 0;
    }
  }
  std::printf("device: %s\n", cuda::device_description().c_str());
  verify_w3();
  verify_w4();
  for (const std::size_t batch : {std::size_t(256), std::size_t(4096)})
    for (const bool tf32 : {false, true})
      for (const bool graph : {false, true}) {
        const std::string name = "BM_W4/batch:" + std::to_string(batch) + (graph ? "/graph" : "/uncaptured") +
                                 (tf32 ? "/tf32" : "/fp32");
        benchmark::RegisterBenchmark(name.c_str(), BM_W4, batch, graph, tf32)
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond)
            ->Iterations(30);
      }
  for (const std::size_t batch : {std::size_t(256), std::size_t(4096)})
    for (const bool checked : {false, true}) {
      const std::string name = "BM_W4_check_numerics/batch:" + std::to_string(batch) + "/uncaptured/tf32/" +
                               (checked ? "on" : "off");
      benchmark::RegisterBenchmark(name.c_str(), BM_W4_check_numerics, batch, checked)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->Iterations(30);
    }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
