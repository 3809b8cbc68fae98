// W3 and W4 on the GPU, timed with CUDA events (Google Benchmark, manual time).
//
// W3: the loss sum(log(1 + exp(-y * (w * x + b)))) and its gradients with respect to w (N = 2^26) and
//     b, float32, as in bench/gradient.cpp: symflow evaluates the three outputs in one evaluation
//     (cuda::eval_into(std::tie(L, dw, db), ...)), against a hand-written fused kernel in this binary.
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

namespace {
using namespace symflow;
constexpr int launches = 20;

__global__ void random_fill(float* p, std::size_t n, unsigned seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ (seed * 0x9E3779B9u);
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    p[i] = lo + (hi - lo) * float(x) * (1.0f / 4294967296.0f);
  }
}

// Times `launches` back-to-back calls of `run` on `stream` per iteration and reports one call.
template <class F>
void time_launches(benchmark::State& state, cudaStream_t stream, F&& run) {
  cudaEvent_t start{}, stop{};
  SYMFLOW_CUDA_CHECK(cudaEventCreate(&start));
  SYMFLOW_CUDA_CHECK(cudaEventCreate(&stop));
  run();  // warm-up (module load, first allocations)
  SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (auto _ : state) {
    SYMFLOW_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int k = 0; k < launches; ++k) run();
    SYMFLOW_CUDA_CHECK(cudaEventRecord(stop, stream));
    SYMFLOW_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SYMFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    state.SetIterationTime(double(ms) / 1e3 / launches);
  }
  SYMFLOW_CUDA_CHECK(cudaGetLastError());
  SYMFLOW_CUDA_CHECK(cudaEventDestroy(start));
  SYMFLOW_CUDA_CHECK(cudaEventDestroy(stop));
  state.SetLabel(cuda::device_description());
}

// ---- W3 -------------------------------------------------------------------------------------------

constexpr std::size_t w3_n = std::size_t(1) << 26;

// The models are the GPU suite's (tests/cuda/training_model.hpp), so the benchmark times what the
// tests check.
const symflow_cuda_test::training::w3_model w3;
const auto& w3_x = w3.x;
const auto& w3_y = w3.y;
const auto& w3_w = w3.w;
const auto& w3_b = w3.b;
const auto w3_loss = w3.loss();
const auto w3_grads = w3.gradients();

struct w3_data {
  cuda::device_tensor<float, shape<dyn>> x{extents_t<1>{w3_n}}, y{extents_t<1>{w3_n}}, w{extents_t<1>{w3_n}},
      dw{extents_t<1>{w3_n}};
  cuda::device_tensor<float, shape<>> b{extents_t<0>{}}, loss{extents_t<0>{}}, db{extents_t<0>{}};
  cuda::device_tensor<float, shape<dyn>> sums{extents_t<1>{2}};  // the hand kernel's loss and db
  w3_data() {
    random_fill<<<1024, 256>>>(x.data(), w3_n, 1, -2.0f, 2.0f);
    random_fill<<<1024, 256>>>(y.data(), w3_n, 2, -1.0f, 1.0f);
    random_fill<<<1024, 256>>>(w.data(), w3_n, 3, -0.2f, 0.2f);
    random_fill<<<1, 1>>>(b.data(), 1, 4, 0.05f, 0.15f);
    SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  }
  static w3_data& get() {
    static w3_data d;
    return d;
  }
};

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// The hand-written W3: one pass, four elements per thread (16-byte loads and stores), a grid-stride
// loop over a grid that fills the GPU once, each block's loss and db sums added atomically.
__global__ void __launch_bounds__(256) w3_hand(const float4* __restrict__ x, const float4* __restrict__ y,
                                               const float4* __restrict__ w, const float* __restrict__ b,
                                               float4* __restrict__ dw, float* __restrict__ sums, std::size_t n4) {
  const float bias = *b;
  float loss = 0.f, db = 0.f;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n4; i += std::size_t(gridDim.x) * blockDim.x) {
    const float4 xv = x[i], yv = y[i], wv = w[i];
    float4 g;
    auto one = [&](float xs, float ys, float ws) {
      const float e = expf(-ys * (ws * xs + bias));
      loss += log1pf(e);
      const float gz = -ys * (e / (1.0f + e));
      db += gz;
      return gz * xs;
    };
    g.x = one(xv.x, yv.x, wv.x);
    g.y = one(xv.y, yv.y, wv.y);
    g.z = one(xv.z, yv.z, wv.z);
    g.w = one(xv.w, yv.w, wv.w);
    dw[i] = g;
  }
  __shared__ float partial[2][8];
  loss = warp_sum(loss);
  db = warp_sum(db);
  if ((threadIdx.x & 31) == 0) {
    partial[0][threadIdx.x >> 5] = loss;
    partial[1][threadIdx.x >> 5] = db;
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    loss = warp_sum(threadIdx.x < 8 ? partial[0][threadIdx.x] : 0.f);
    db = warp_sum(threadIdx.x < 8 ? partial[1][threadIdx.x] : 0.f);
    if (threadIdx.x == 0) {
      atomicAdd(&sums[0], loss);
      atomicAdd(&sums[1], db);
    }
  }
}

void run_w3_hand() {
  w3_data& d = w3_data::get();
  int sms = 0;
  SYMFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  SYMFLOW_CUDA_CHECK(cudaMemsetAsync(d.sums.data(), 0, 2 * sizeof(float)));
  w3_hand<<<unsigned(sms * 8), 256>>>(reinterpret_cast<const float4*>(d.x.data()), reinterpret_cast<const float4*>(d.y.data()),
                                      reinterpret_cast<const float4*>(d.w.data()), d.b.data(),
                                      reinterpret_cast<float4*>(d.dw.data()), d.sums.data(), w3_n / 4);
}
void run_w3_symflow() {
  w3_data& d = w3_data::get();
  const auto& [dw, db] = w3_grads;
  cuda::eval_into(std::tie(d.loss, d.dw, d.db), w3_loss, dw, db, cuda::feed(w3_x, d.x), cuda::feed(w3_y, d.y),
                  cuda::feed(w3_w, d.w), cuda::feed(w3_b, d.b));
}
void run_w3_symflow_separately() {
  w3_data& d = w3_data::get();
  const auto& [dw, db] = w3_grads;
  auto feeds = [&](const auto& e, auto& out) {
    cuda::eval_into(out, e, cuda::feed(w3_x, d.x), cuda::feed(w3_y, d.y), cuda::feed(w3_w, d.w), cuda::feed(w3_b, d.b));
  };
  feeds(w3_loss, d.loss);
  feeds(dw, d.dw);
  feeds(db, d.db);
}

// Bytes one pass must move: x, y, w read, dw written.
void w3_counters(benchmark::State& state) {
  state.counters["GB/s"] = benchmark::Counter(double(4 * w3_n * sizeof(float)) * double(state.iterations()),
                                              benchmark::Counter::kIsRate);
}
void BM_W3_hand(benchmark::State& s) {
  time_launches(s, nullptr, run_w3_hand);
  w3_counters(s);
}
void BM_W3_symflow(benchmark::State& s) {
  time_launches(s, nullptr, run_w3_symflow);
  w3_counters(s);
}
void BM_W3_symflow_three_evaluations(benchmark::State& s) {
  time_launches(s, nullptr, run_w3_symflow_separately);
  w3_counters(s);
}

void verify_w3() {
  w3_data& d = w3_data::get();
  run_w3_symflow();
  const auto dw_s = d.dw.to_host();
  const float loss_s = d.loss.to_host()[0], db_s = d.db.to_host()[0];
  run_w3_hand();
  const auto dw_h = d.dw.to_host();
  const auto sums = d.sums.to_host();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < w3_n; ++i) {
    num += double(dw_s[i] - dw_h[i]) * double(dw_s[i] - dw_h[i]);
    den += double(dw_h[i]) * double(dw_h[i]);
  }
  std::printf("check W3: ||dw symflow - hand|| / ||hand|| = %.3g; loss %.9g vs %.9g (rel %.3g); db %.9g vs %.9g (rel %.3g)\n",
              std::sqrt(num / den), loss_s, sums[0], std::abs(loss_s - sums[0]) / std::abs(sums[0]), db_s, sums[1],
              std::abs(db_s - sums[1]) / std::abs(sums[1]));
}

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

#define SYMFLOW_GPU_BENCH(f) BENCHMARK(f)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(30)
SYMFLOW_GPU_BENCH(BM_W3_hand);
SYMFLOW_GPU_BENCH(BM_W3_symflow);
SYMFLOW_GPU_BENCH(BM_W3_symflow_three_evaluations);
}  // namespace

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
