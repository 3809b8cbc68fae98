// bench/elementwise: two fused elementwise workloads over N = 2^24 float32 elements,
//   W1 = a*b + c*sin(d)
//   W2 = tanh(a*b + c) * exp(-d*d) + 0.5*a
// each evaluated four ways:
//   symflow      - eval_into a reused output (one fused, SIMD, OpenMP pass)
//   handwritten  - a plain `omp parallel for simd` loop with std::sin etc., -ffast-math (elementwise_hand.cpp)
//   eigen_tensor - Eigen::TensorMap expression on a ThreadPoolDevice with 2 threads
//   naive        - one pass and one temporary per op, as an eager framework does (each op is a
//                  single-op symflow evaluation, so the per-op kernels are vectorised and threaded;
//                  temporaries are allocated once and reused, the best case for an eager framework)
// plus memory floors: BM_copy (out = in, the achievable bandwidth) and out = a+b+c+d, the access
// pattern of W1 and W2 with no arithmetic to speak of: BM_floor/read4_write1 with ordinary stores
// (each output line is also read first, 6 arrays of traffic) and BM_floor/read4_write1_streaming with
// non-temporal stores (5 arrays: the least a W1/W2 pass can move). bytes_per_second counts
// inputs read + output written (5 arrays for W1/W2, 2 for the copy), whatever the hardware moves.
#define EIGEN_USE_THREADS
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>
#include <symflow/symflow.hpp>
#include <unsupported/Eigen/CXX11/Tensor>

#include "elementwise_hand.hpp"

namespace {

using namespace symflow;
using vec = tensor<float, shape<dyn>>;

constexpr std::size_t n = std::size_t(1) << 24;
constexpr std::int64_t bytes_w = 5 * std::int64_t(n) * sizeof(float);  // 4 inputs read + 1 output written

struct data_set {
  vec a, b, c, d, out;
  vec tmp[8];
  data_set() {
    const extents_t<1> e{n};
    vec* all[] = {&a, &b, &c, &d};
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-2.f, 2.f);
    for (vec* v : all) {
      *v = vec(e, uninitialized);
      for (std::size_t i = 0; i < n; ++i) (*v)[i] = dist(rng);
    }
    out = vec(e, 0.f);  // touched once here, reused by every iteration
    for (vec& t : tmp) t = vec(e, 0.f);
  }
};

data_set& data() {
  static data_set d;
  return d;
}

Eigen::ThreadPoolDevice& eigen_device() {
  static Eigen::ThreadPool pool(2);
  static Eigen::ThreadPoolDevice device(&pool, 2);
  return device;
}

using emap = Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor, Eigen::Index>, Eigen::Aligned64>;
using cmap = Eigen::TensorMap<Eigen::Tensor<const float, 1, Eigen::RowMajor, Eigen::Index>, Eigen::Aligned64>;

const auto pa = placeholder<"a", float, shape<dyn>>();
const auto pb = placeholder<"b", float, shape<dyn>>();
const auto pc = placeholder<"c", float, shape<dyn>>();
const auto pd = placeholder<"d", float, shape<dyn>>();
const auto px = placeholder<"x", float, shape<dyn>>();
const auto py = placeholder<"y", float, shape<dyn>>();

// Runs `pass` once untimed (thread pools started, pages and TLBs warm), then once per iteration.
template <class Pass>
void measure(benchmark::State& state, std::int64_t bytes, Pass&& pass) {
  pass();
  for (auto _ : state) {
    pass();
    benchmark::DoNotOptimize(data().out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * bytes);
}

// ---------------------------------------------------------------- W1 = a*b + c*sin(d)

void w1_symflow(benchmark::State& state) {
  auto& s = data();
  const auto w1 = pa * pb + pc * sin(pd);
  measure(state, bytes_w, [&] { eval_into(s.out, w1, pa = s.a, pb = s.b, pc = s.c, pd = s.d); });
}

void w1_handwritten(benchmark::State& state) {
  auto& s = data();
  measure(state, bytes_w, [&] { bench::hand_w1(s.a.data(), s.b.data(), s.c.data(), s.d.data(), s.out.data(), n); });
}

void w1_eigen_tensor(benchmark::State& state) {
  auto& s = data();
  auto& dev = eigen_device();
  const Eigen::Index len = Eigen::Index(n);
  cmap a(s.a.data(), len), b(s.b.data(), len), c(s.c.data(), len), d(s.d.data(), len);
  emap out(s.out.data(), len);
  // Eigen::Tensor has no .sin(); the functor is the one Eigen's dense sin() uses (psin per packet).
  measure(state, bytes_w, [&] { out.device(dev) = a * b + c * d.unaryExpr(Eigen::internal::scalar_sin_op<float>()); });
}

void w1_naive(benchmark::State& state) {
  auto& s = data();
  auto& t = s.tmp;
  const auto mul = px * py;
  const auto add = px + py;
  const auto sine = sin(px);
  measure(state, bytes_w, [&] {
    eval_into(t[0], mul, px = s.a, py = s.b);     // a*b
    eval_into(t[1], sine, px = s.d);              // sin(d)
    eval_into(t[2], mul, px = s.c, py = t[1]);    // c*sin(d)
    eval_into(s.out, add, px = t[0], py = t[2]);  // a*b + c*sin(d)
  });
}

// ---------------------------------------------------------------- W2 = tanh(a*b + c) * exp(-d*d) + 0.5*a

void w2_symflow(benchmark::State& state) {
  auto& s = data();
  const auto w2 = tanh(pa * pb + pc) * exp(-pd * pd) + 0.5f * pa;
  measure(state, bytes_w, [&] { eval_into(s.out, w2, pa = s.a, pb = s.b, pc = s.c, pd = s.d); });
}

void w2_handwritten(benchmark::State& state) {
  auto& s = data();
  measure(state, bytes_w, [&] { bench::hand_w2(s.a.data(), s.b.data(), s.c.data(), s.d.data(), s.out.data(), n); });
}

void w2_eigen_tensor(benchmark::State& state) {
  auto& s = data();
  auto& dev = eigen_device();
  const Eigen::Index len = Eigen::Index(n);
  cmap a(s.a.data(), len), b(s.b.data(), len), c(s.c.data(), len), d(s.d.data(), len);
  emap out(s.out.data(), len);
  measure(state, bytes_w, [&] { out.device(dev) = (a * b + c).tanh() * (-d * d).exp() + 0.5f * a; });
}

void w2_naive(benchmark::State& state) {
  auto& s = data();
  auto& t = s.tmp;
  const auto mul = px * py;
  const auto add = px + py;
  const auto neg = -px;
  const auto th = tanh(px);
  const auto ex = exp(px);
  const auto half = 0.5f * px;
  measure(state, bytes_w, [&] {
    eval_into(t[0], mul, px = s.a, py = s.b);     // a*b
    eval_into(t[1], add, px = t[0], py = s.c);    // a*b + c
    eval_into(t[2], th, px = t[1]);               // tanh(.)
    eval_into(t[3], neg, px = s.d);               // -d
    eval_into(t[4], mul, px = t[3], py = s.d);    // -d*d
    eval_into(t[5], ex, px = t[4]);               // exp(.)
    eval_into(t[6], mul, px = t[2], py = t[5]);   // tanh(.) * exp(.)
    eval_into(t[7], half, px = s.a);              // 0.5*a
    eval_into(s.out, add, px = t[6], py = t[7]);  // the sum
  });
}

// ---------------------------------------------------------------- memory floors

void copy(benchmark::State& state) {
  auto& s = data();
  measure(state, 2 * std::int64_t(n) * sizeof(float), [&] { bench::copy(s.a.data(), s.out.data(), n); });
}

void read4_write1(benchmark::State& state) {
  auto& s = data();
  measure(state, bytes_w, [&] { bench::read4_write1(s.a.data(), s.b.data(), s.c.data(), s.d.data(), s.out.data(), n); });
}

void read4_write1_streaming(benchmark::State& state) {
  auto& s = data();
  measure(state, bytes_w,
          [&] { bench::read4_write1_streaming(s.a.data(), s.b.data(), s.c.data(), s.d.data(), s.out.data(), n); });
}

// With --benchmark_repetitions, a "min" row joins mean/median/stddev: on a noisy shared machine the
// fastest repetition is the least disturbed one.
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

#define SYMFLOW_BENCH(fn, name) \
  BENCHMARK(fn)->Name(name)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", min_of)

SYMFLOW_BENCH(copy, "BM_copy");
SYMFLOW_BENCH(read4_write1, "BM_floor/read4_write1");
SYMFLOW_BENCH(read4_write1_streaming, "BM_floor/read4_write1_streaming");
SYMFLOW_BENCH(w1_symflow, "BM_W1/symflow");
SYMFLOW_BENCH(w1_handwritten, "BM_W1/handwritten");
SYMFLOW_BENCH(w1_eigen_tensor, "BM_W1/eigen_tensor");
SYMFLOW_BENCH(w1_naive, "BM_W1/naive");
SYMFLOW_BENCH(w2_symflow, "BM_W2/symflow");
SYMFLOW_BENCH(w2_handwritten, "BM_W2/handwritten");
SYMFLOW_BENCH(w2_eigen_tensor, "BM_W2/eigen_tensor");
SYMFLOW_BENCH(w2_naive, "BM_W2/naive");

}  // namespace

BENCHMARK_MAIN();
