// W3 on the GPU, timed with CUDA events (Google Benchmark, manual time): the loss
// sum(log(1 + exp(-y * (w * x + b)))) and its gradients with respect to w (N = 2^26) and b, float32,
// as in bench/gradient.cpp: symflow evaluates the three outputs in one evaluation
// (cuda::eval_into(std::tie(L, dw, db), ...)), against a hand-written fused kernel in this binary.
// Part of bench_cuda_training (main and W4: training.cu), a translation unit of its own to keep each
// one's build under a minute.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>

#include <symflow/cuda.hpp>
#include <symflow/ops/all.hpp>
#include <symflow/symbolic/gradient.hpp>

#include "../../tests/cuda/training_model.hpp"
#include "timing.cuh"

namespace {
using namespace symflow;

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

}  // namespace

// Called by main (training.cu) before the benchmarks run.
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

namespace {
#define SYMFLOW_GPU_BENCH(f) BENCHMARK(f)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(30)
SYMFLOW_GPU_BENCH(BM_W3_hand);
SYMFLOW_GPU_BENCH(BM_W3_symflow);
SYMFLOW_GPU_BENCH(BM_W3_symflow_three_evaluations);
}  // namespace
