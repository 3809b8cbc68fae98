// bench/model_blocks: the patterns model blocks create, symflow against a hand-written loop
// (model_blocks_hand.cpp, -ffast-math) and, for elementwise transcendentals, Eigen::Tensor:
//   rows/*      a row reduction feeding elementwise work, [8192, 512] float32 (16 MiB): softmax,
//               log_softmax, layer_norm (with gamma and beta) and logsumexp (one value per row).
//               The floor is one read of the rows and one write of the result: BM_copy for the
//               first three, half of it for logsumexp.
//   adam/*      one Adam update of 2^22 float32 parameters in place: 4 arrays read (parameter,
//               gradient, two moments), 3 written; the floor is BM_floor/read4_write3.
//   unary/*     y = f(x) over 2^24 float32 for f in exp, tanh, log, erf, sigmoid; the floor is
//               BM_copy at 2^24.
// bytes_per_second counts what the floor counts, so symflow's and the floor's rows compare directly.
#define EIGEN_USE_THREADS
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>
#include <symflow/symflow.hpp>
#include <symflow/train/optimizers.hpp>
#include <unsupported/Eigen/CXX11/Tensor>

#include "elementwise_hand.hpp"
#include "model_blocks_hand.hpp"

namespace {

using namespace symflow;

constexpr std::size_t rows = 8192, cols = 512, row_elements = rows * cols;
constexpr std::size_t parameters = std::size_t(1) << 22;
constexpr std::size_t elements = std::size_t(1) << 24;
constexpr std::int64_t float_bytes = sizeof(float);

template <class T, class S>
tensor<T, S> random_tensor(extents_t<S::rank> e, float low, float high, unsigned seed) {
  tensor<T, S> t(e, uninitialized);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = dist(rng);
  return t;
}

using row_tensor = tensor<float, shape<dyn, cols>>;
using flat = tensor<float, shape<dyn>>;

struct data_set {
  // Extents in parentheses: braces would pick the constructor from a list of values.
  row_tensor x = random_tensor<float, shape<dyn, cols>>({rows, cols}, -4, 4, 1), y = row_tensor({rows, cols}, 0.f);
  tensor<float, shape<cols>> gamma = random_tensor<float, shape<cols>>({cols}, 0.5, 1.5, 2),
                             beta = random_tensor<float, shape<cols>>({cols}, -1, 1, 3);
  flat per_row = flat({rows}, 0.f);
  // Positive inputs, so that log is defined everywhere.
  flat in = random_tensor<float, shape<dyn>>({elements}, 0.01f, 4, 4), out = flat({elements}, 0.f);
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

const auto px = placeholder<"x", float, shape<dyn, cols>>();
const auto pgamma = placeholder<"gamma", float, shape<cols>>();
const auto pbeta = placeholder<"beta", float, shape<cols>>();
const auto pv = placeholder<"v", float, shape<dyn>>();

template <class Pass>
void measure(benchmark::State& state, std::int64_t bytes, Pass&& pass) {
  pass();  // thread pools started, pages and TLBs warm
  for (auto _ : state) {
    pass();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * bytes);
}

constexpr std::int64_t rows_in_out = 2 * std::int64_t(row_elements) * float_bytes;
constexpr std::int64_t rows_in = std::int64_t(row_elements) * float_bytes;
constexpr std::int64_t unary_in_out = 2 * std::int64_t(elements) * float_bytes;
constexpr std::int64_t adam_bytes = 7 * std::int64_t(parameters) * float_bytes;

// ---------------------------------------------------------------- rows

void softmax_symflow(benchmark::State& state) {
  auto& s = data();
  const auto e = softmax(px);
  measure(state, rows_in_out, [&] { eval_into(s.y, e, px = s.x); });
}
void softmax_hand(benchmark::State& state) {
  auto& s = data();
  measure(state, rows_in_out, [&] { bench::softmax_rows(s.x.data(), s.y.data(), rows, cols); });
}
void log_softmax_symflow(benchmark::State& state) {
  auto& s = data();
  const auto e = log_softmax(px);
  measure(state, rows_in_out, [&] { eval_into(s.y, e, px = s.x); });
}
void log_softmax_hand(benchmark::State& state) {
  auto& s = data();
  measure(state, rows_in_out, [&] { bench::log_softmax_rows(s.x.data(), s.y.data(), rows, cols); });
}
void layer_norm_symflow(benchmark::State& state) {
  auto& s = data();
  const auto e = layer_norm(px, pgamma, pbeta, 1e-5);
  measure(state, rows_in_out, [&] { eval_into(s.y, e, px = s.x, pgamma = s.gamma, pbeta = s.beta); });
}
void layer_norm_hand(benchmark::State& state) {
  auto& s = data();
  measure(state, rows_in_out,
          [&] { bench::layer_norm_rows(s.x.data(), s.gamma.data(), s.beta.data(), s.y.data(), rows, cols, 1e-5f); });
}
void logsumexp_symflow(benchmark::State& state) {
  auto& s = data();
  const auto e = logsumexp(px);
  measure(state, rows_in, [&] { eval_into(s.per_row, e, px = s.x); });
}
void logsumexp_hand(benchmark::State& state) {
  auto& s = data();
  measure(state, rows_in, [&] { bench::logsumexp_rows(s.x.data(), s.per_row.data(), rows, cols); });
}
void rows_copy(benchmark::State& state) {
  auto& s = data();
  measure(state, rows_in_out, [&] { bench::copy(s.x.data(), s.y.data(), row_elements); });
}

// ---------------------------------------------------------------- Adam

struct adam_set {
  variable<"W", float, shape<dyn>> W;
  adam optimizer{{.learning_rate = 1e-3}};
  params model, state;
  flat gradient = random_tensor<float, shape<dyn>>({parameters}, -1, 1, 5);
  flat w = random_tensor<float, shape<dyn>>({parameters}, -1, 1, 6), m = flat({parameters}, 0.f), v = flat({parameters}, 0.f),
       g = random_tensor<float, shape<dyn>>({parameters}, -1, 1, 5);
  adam_set() {
    model.set("W", random_tensor<float, shape<dyn>>({parameters}, -1, 1, 6));
    state = optimizer.initial_state(model, W);
  }
};
adam_set& adam_data() {
  static adam_set d;
  return d;
}

void adam_symflow(benchmark::State& state) {
  auto& s = adam_data();
  measure(state, adam_bytes, [&] { s.optimizer.step(s.model, s.state, std::tie(s.W), std::tie(s.gradient)); });
}
void adam_hand(benchmark::State& state) {
  auto& s = adam_data();
  measure(state, adam_bytes, [&] {
    bench::adam(s.w.data(), s.m.data(), s.v.data(), s.g.data(), parameters, 0.9f, 0.999f, 1e-3f, 1.0f, 1e-8f);
  });
}
// The least an in-place update of this shape moves: 4 arrays read, 3 written, no arithmetic.
void adam_floor(benchmark::State& state) {
  auto& s = adam_data();
  measure(state, adam_bytes, [&] { bench::read4_write3(s.w.data(), s.m.data(), s.v.data(), s.g.data(), parameters); });
}

// ---------------------------------------------------------------- unary transcendentals

template <class Expression, class Hand, class Eigen_op>
void unary_rows(benchmark::State& state, int which, const Expression& e, Hand hand, Eigen_op eigen_op) {
  auto& s = data();
  using emap = Eigen::TensorMap<Eigen::Tensor<float, 1, Eigen::RowMajor, Eigen::Index>, Eigen::Aligned64>;
  using cmap = Eigen::TensorMap<Eigen::Tensor<const float, 1, Eigen::RowMajor, Eigen::Index>, Eigen::Aligned64>;
  if (which == 0) {
    measure(state, unary_in_out, [&] { eval_into(s.out, e, pv = s.in); });
  } else if (which == 1) {
    measure(state, unary_in_out, [&] { hand(s.in.data(), s.out.data(), elements); });
  } else {
    cmap in(s.in.data(), Eigen::Index(elements));
    emap out(s.out.data(), Eigen::Index(elements));
    measure(state, unary_in_out, [&] { out.device(eigen_device()) = eigen_op(in); });
  }
}
#define SYMFLOW_UNARY(name, expression, eigen_expression)                                              \
  void unary_##name(benchmark::State& state) {                                                         \
    unary_rows(state, int(state.range(0)), expression, bench::name, [](const auto& x) { return eigen_expression; }); \
  }
SYMFLOW_UNARY(exp, exp(pv), x.exp())
SYMFLOW_UNARY(tanh, tanh(pv), x.tanh())
SYMFLOW_UNARY(log, log(pv), x.log())
SYMFLOW_UNARY(erf, erf(pv), x.erf())
SYMFLOW_UNARY(sigmoid, sigmoid(pv), x.sigmoid())
#undef SYMFLOW_UNARY
void unary_copy(benchmark::State& state) {
  auto& s = data();
  measure(state, unary_in_out, [&] { bench::copy(s.in.data(), s.out.data(), elements); });
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

#define SYMFLOW_BENCH(fn, name) \
  BENCHMARK(fn)->Name(name)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", min_of)

SYMFLOW_BENCH(rows_copy, "BM_rows/copy");
SYMFLOW_BENCH(softmax_symflow, "BM_rows/softmax/symflow");
SYMFLOW_BENCH(softmax_hand, "BM_rows/softmax/handwritten");
SYMFLOW_BENCH(log_softmax_symflow, "BM_rows/log_softmax/symflow");
SYMFLOW_BENCH(log_softmax_hand, "BM_rows/log_softmax/handwritten");
SYMFLOW_BENCH(layer_norm_symflow, "BM_rows/layer_norm/symflow");
SYMFLOW_BENCH(layer_norm_hand, "BM_rows/layer_norm/handwritten");
SYMFLOW_BENCH(logsumexp_symflow, "BM_rows/logsumexp/symflow");
SYMFLOW_BENCH(logsumexp_hand, "BM_rows/logsumexp/handwritten");
SYMFLOW_BENCH(adam_floor, "BM_adam/floor_read4_write3");
SYMFLOW_BENCH(adam_symflow, "BM_adam/symflow");
SYMFLOW_BENCH(adam_hand, "BM_adam/handwritten");
SYMFLOW_BENCH(unary_copy, "BM_unary/copy");
// Argument: 0 symflow, 1 hand-written, 2 Eigen::Tensor.
SYMFLOW_BENCH(unary_exp, "BM_unary/exp")->DenseRange(0, 2);
SYMFLOW_BENCH(unary_tanh, "BM_unary/tanh")->DenseRange(0, 2);
SYMFLOW_BENCH(unary_log, "BM_unary/log")->DenseRange(0, 2);
SYMFLOW_BENCH(unary_erf, "BM_unary/erf")->DenseRange(0, 2);
SYMFLOW_BENCH(unary_sigmoid, "BM_unary/sigmoid")->DenseRange(0, 2);

}  // namespace

BENCHMARK_MAIN();
