// W1 = a*b + c*sin(d) and W2 = tanh(a*b + c)*exp(-d*d) + 0.5*a at N = 2^26 (float32) on the GPU:
// symflow's generated kernels (cuda::eval_into, and cuda::eval which also allocates its result)
// against hand-written kernels in the same binary. Manual timing with CUDA events: each benchmark
// iteration times `launches` back-to-back calls and reports the time of one.
//
//   bench_cuda_elementwise --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include <symflow/cuda.hpp>
#include <symflow/ops/all.hpp>

#include "timing.cuh"

namespace {
using namespace symflow;
constexpr std::size_t N = std::size_t(1) << 26;

// The hand-written kernels: one float4 per thread, 16-byte loads and stores.
__global__ void w1_hand(const float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                        const float4* __restrict__ d, float4* __restrict__ out, std::size_t n4) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= n4) return;
  const float4 x = a[i], y = b[i], z = c[i], w = d[i];
  out[i] = make_float4(x.x * y.x + z.x * sinf(w.x), x.y * y.y + z.y * sinf(w.y), x.z * y.z + z.z * sinf(w.z),
                       x.w * y.w + z.w * sinf(w.w));
}
__device__ __forceinline__ float w2_one(float a, float b, float c, float d) {
  return tanhf(a * b + c) * expf(-d * d) + 0.5f * a;
}
__global__ void w2_hand(const float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                        const float4* __restrict__ d, float4* __restrict__ out, std::size_t n4) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= n4) return;
  const float4 x = a[i], y = b[i], z = c[i], w = d[i];
  out[i] = make_float4(w2_one(x.x, y.x, z.x, w.x), w2_one(x.y, y.y, z.y, w.y), w2_one(x.z, y.z, z.z, w.z),
                       w2_one(x.w, y.w, z.w, w.w));
}

struct workload {
  cuda::device_tensor<float, shape<dyn>> a, b, c, d, out;
  cudaEvent_t start{}, stop{};
  workload()
      : a(extents_t<1>{N}), b(extents_t<1>{N}), c(extents_t<1>{N}), d(extents_t<1>{N}), out(extents_t<1>{N}) {
    unsigned seed = 1;
    for (auto* t : {&a, &b, &c, &d}) random_fill<<<1024, 256>>>(t->data(), N, seed++, -1.0f, 1.0f);
    SYMFLOW_CUDA_CHECK(cudaEventCreate(&start));
    SYMFLOW_CUDA_CHECK(cudaEventCreate(&stop));
    SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  }
  static workload& get() {
    static workload w;
    return w;
  }
};

auto a_ = placeholder<"a", float, shape<dyn>>();
auto b_ = placeholder<"b", float, shape<dyn>>();
auto c_ = placeholder<"c", float, shape<dyn>>();
auto d_ = placeholder<"d", float, shape<dyn>>();
const auto W1 = a_ * b_ + c_ * sin(d_);
const auto W2 = tanh(a_ * b_ + c_) * exp(-d_ * d_) + 0.5 * a_;

template <class F>
void time_launches(benchmark::State& state, F&& run) {
  workload& w = workload::get();
  run();  // warm-up (module load, first allocation)
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  for (auto _ : state) {
    SYMFLOW_CUDA_CHECK(cudaEventRecord(w.start));
    for (int k = 0; k < launches; ++k) run();
    SYMFLOW_CUDA_CHECK(cudaEventRecord(w.stop));
    SYMFLOW_CUDA_CHECK(cudaEventSynchronize(w.stop));
    float ms = 0;
    SYMFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, w.start, w.stop));
    state.SetIterationTime(double(ms) / 1e3 / launches);
  }
  SYMFLOW_CUDA_CHECK(cudaGetLastError());
  state.counters["GB/s"] = benchmark::Counter(double(5 * N * sizeof(float)) * double(state.iterations()),
                                              benchmark::Counter::kIsRate);
  state.SetLabel(cuda::device_description());
}

template <class E>
void run_symflow(const E& e) {
  workload& w = workload::get();
  cuda::eval_into(w.out, e, cuda::feed(a_, w.a), cuda::feed(b_, w.b), cuda::feed(c_, w.c), cuda::feed(d_, w.d));
}
template <class E>
void run_symflow_alloc(const E& e) {
  workload& w = workload::get();
  auto r = cuda::eval(e, cuda::feed(a_, w.a), cuda::feed(b_, w.b), cuda::feed(c_, w.c), cuda::feed(d_, w.d));
  benchmark::DoNotOptimize(r.data());
}
template <class K>
void run_hand(K kernel) {
  workload& w = workload::get();
  const std::size_t n4 = N / 4;
  kernel<<<unsigned((n4 + 255) / 256), 256>>>(reinterpret_cast<const float4*>(w.a.data()),
                                               reinterpret_cast<const float4*>(w.b.data()),
                                               reinterpret_cast<const float4*>(w.c.data()),
                                               reinterpret_cast<const float4*>(w.d.data()),
                                               reinterpret_cast<float4*>(w.out.data()), n4);
}

// A fused reduction: sum(W1) reads the four inputs once and writes one scalar (no temporary for W1).
void BM_sum_W1_symflow(benchmark::State& state) {
  static cuda::device_tensor<float, shape<>> total;
  const auto e = sum(W1);
  time_launches(state, [&] {
    workload& w = workload::get();
    cuda::eval_into(total, e, cuda::feed(a_, w.a), cuda::feed(b_, w.b), cuda::feed(c_, w.c), cuda::feed(d_, w.d));
  });
  state.counters["GB/s"] = benchmark::Counter(double(4 * N * sizeof(float)) * double(state.iterations()),
                                              benchmark::Counter::kIsRate);
}

// check_numerics on (docs/debugging.md): each evaluation clears a device flag, runs the checked kernel
// and reads the flag back (one small copy and a wait per evaluation, included here), ...
template <class E>
void BM_checked(benchmark::State& state, const E& e) {
  check_numerics_scope on;
  time_launches(state, [&] { run_symflow(e); });
}
// ... and the kernel alone, checked or not, timed by the backend's per-group profile (events around
// each launch, so the waits above are not counted).
template <class E>
void BM_kernel(benchmark::State& state, const E& e, bool checked) {
  check_numerics_scope check(checked);
  run_symflow(e);
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  for (auto _ : state) {
    cuda::reset_profile();
    {
      cuda::profiling_scope on;
      for (int k = 0; k < launches; ++k) run_symflow(e);
    }
    double seconds = 0;
    std::size_t count = 0;
    for (const auto& entry : cuda::profile().entries)
      if (entry.description.rfind("map_", 0) == 0) {
        seconds += entry.seconds;
        count += entry.launches;
      }
    state.SetIterationTime(count ? seconds / double(count) : 0.0);
  }
  state.counters["GB/s"] = benchmark::Counter(double(5 * N * sizeof(float)) * double(state.iterations()),
                                              benchmark::Counter::kIsRate);
  state.SetLabel(cuda::device_description());
}

void BM_W1_hand(benchmark::State& s) { time_launches(s, [] { run_hand(w1_hand); }); }
void BM_W1_symflow(benchmark::State& s) { time_launches(s, [] { run_symflow(W1); }); }
void BM_W1_symflow_alloc(benchmark::State& s) { time_launches(s, [] { run_symflow_alloc(W1); }); }
void BM_W2_hand(benchmark::State& s) { time_launches(s, [] { run_hand(w2_hand); }); }
void BM_W2_symflow(benchmark::State& s) { time_launches(s, [] { run_symflow(W2); }); }
void BM_W2_symflow_alloc(benchmark::State& s) { time_launches(s, [] { run_symflow_alloc(W2); }); }
// A fixed iteration count: Google Benchmark would otherwise aim at 0.5 s of *manual* time, i.e.
// `launches` times as much wall time.
#define SYMFLOW_GPU_BENCH(f) BENCHMARK(f)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(30)
SYMFLOW_GPU_BENCH(BM_W1_hand);
SYMFLOW_GPU_BENCH(BM_W1_symflow);
SYMFLOW_GPU_BENCH(BM_W1_symflow_alloc);
SYMFLOW_GPU_BENCH(BM_W2_hand);
SYMFLOW_GPU_BENCH(BM_W2_symflow);
SYMFLOW_GPU_BENCH(BM_W2_symflow_alloc);
SYMFLOW_GPU_BENCH(BM_sum_W1_symflow);
// check_numerics overhead: off / on per evaluation, and the map kernel alone unchecked / checked.
BENCHMARK_CAPTURE(BM_checked, W1_check_numerics, W1)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(30);
BENCHMARK_CAPTURE(BM_checked, W2_check_numerics, W2)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(30);
BENCHMARK_CAPTURE(BM_kernel, W1_kernel_unchecked, W1, false)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(30);
BENCHMARK_CAPTURE(BM_kernel, W1_kernel_checked, W1, true)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(30);
BENCHMARK_CAPTURE(BM_kernel, W2_kernel_unchecked, W2, false)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(30);
BENCHMARK_CAPTURE(BM_kernel, W2_kernel_checked, W2, true)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(30);

// symflow and the hand-written kernels must compute the same function: compared once on the data.
void verify() {
  workload& w = workload::get();
  auto check = [&](const char* name, auto symflow_run, auto hand_run) {
    symflow_run();
    const auto s = w.out.to_host();
    hand_run();
    const auto h = w.out.to_host();
    double num = 0, den = 0;
    for (std::size_t i = 0; i < N; ++i) {
      num += double(s[i] - h[i]) * double(s[i] - h[i]);
      den += double(h[i]) * double(h[i]);
    }
    std::printf("check %s: ||symflow - hand|| / ||hand|| = %.3g\n", name, std::sqrt(num / den));
  };
  check("W1", [] { run_symflow(W1); }, [] { run_hand(w1_hand); });
  check("W2", [] { run_symflow(W2); }, [] { run_hand(w2_hand); });
}
}  // namespace

int main(int argc, char** argv) {
  if (!cuda::device_available()) {
    std::printf("bench_cuda_elementwise: %s\n", cuda::device_description().c_str());
    return 0;
  }
  std::printf("device: %s, N = %zu\n", cuda::device_description().c_str(), N);
  verify();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
