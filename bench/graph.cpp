// bench/graph: the interpreter against compiled evaluation on the W1/W2 workloads of
// bench/elementwise (N = 2^24 float32 elements),
//   W1 = a*b + c*sin(d)
//   W2 = tanh(a*b + c) * exp(-d*d) + 0.5*a
// each evaluated as:
//   compiled_into   - eval_into a reused output (one fused SIMD/OpenMP pass; bench/elementwise's figure)
//   compiled_eval   - eval, a fresh result per call: the interpreter also allocates its outputs per run
//   interpreter/tile:T - the expression's graph saved to the binary form and loaded back, run by an
//                     interpreter built once (`run`: new output tensors per call), tiles of T elements
//                     (tile:-1: the default options, which choose the tile per pass)
//   interpreter_into/tile:T - the same with `run_into`, the outputs kept between calls (as eval_into)
//   interpreter_unfused - run_into with one pass over memory per op (intermediates are new per call)
//   interpreter_native_into/tile:T - run_into with the fused pass run by generated code
//                     (interpreter_options::native_passes; compiled before timing starts)
// plus the memory floors of bench/elementwise: out = a+b+c+d with ordinary and with streaming stores.
// BM_runtime_grad_and_plan/<model>/<phase>: what a program that builds its graph at run time pays
// before the first run, phase by phase (issue 15, item 6). Models: mlp (784-256-10, relu,
// softmax cross-entropy written as one_hot * -log_softmax, as examples/graph_model.hpp) and
// lngelu8 (8 hidden layers gelu(layer_norm(matmul(h, W) + b) * g + beta), width 256, with the
// softmax_cross_entropy op); gradients with respect to every parameter; plans for a batch of 256.
//   build        - the graph_builder calls and build()
//   differentiate_uncached / differentiate_cached - differentiate() with the gradient cache
//                  cleared before every call / warm (a training loop's rebuild)
//   interpreter  - constructing the interpreter (validation, the structure key)
//   plan_uncached / plan_cached - the interpreter's plan (node types, fusion groups) computed /
//                  taken from runtime_plan_cache()
//   rebuild_uncached / rebuild_cached - all of the above, caches cleared / warm
// Ratios are only meaningful within one run (docs/benchmarks.md, "Graph interpreter").
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <symflow/graph/all.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/runtime/plan_cache.hpp>
#include <symflow/symflow.hpp>
#include <vector>

#include "elementwise_hand.hpp"

namespace {

using namespace symflow;
using vec = tensor<float, shape<dyn>>;

constexpr std::size_t n = std::size_t(1) << 24;
constexpr std::int64_t bytes_w = 5 * std::int64_t(n) * sizeof(float);  // 4 inputs read + 1 output written

struct data_set {
  vec a, b, c, d, out;
  runtime_feeds feeds;
  data_set() {
    const extents_t<1> e{n};
    vec* all[] = {&a, &b, &c, &d};
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-2.f, 2.f);
    for (vec* v : all) {
      *v = vec(e, uninitialized);
      for (std::size_t i = 0; i < n; ++i) (*v)[i] = dist(rng);
    }
    out = vec(e, 0.f);
    feeds = {{"a", runtime_tensor(a)}, {"b", runtime_tensor(b)}, {"c", runtime_tensor(c)}, {"d", runtime_tensor(d)}};
  }
};

data_set& data() {
  static data_set d;
  return d;
}

const auto pa = placeholder<"a", float, shape<dyn>>();
const auto pb = placeholder<"b", float, shape<dyn>>();
const auto pc = placeholder<"c", float, shape<dyn>>();
const auto pd = placeholder<"d", float, shape<dyn>>();
const auto w1 = pa * pb + pc * sin(pd);
const auto w2 = tanh(pa * pb + pc) * exp(-pd * pd) + 0.5f * pa;

// What a program that never saw the type has: the graph as it comes back from a file.
template <class E>
graph loaded_graph(const E& expr) {
  return load_graph_binary(save_graph_binary(to_graph(expr)));
}

template <class Pass>
void measure(benchmark::State& state, Pass&& pass) {
  pass();  // untimed: threads started, pages and TLBs warm
  for (auto _ : state) {
    pass();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * bytes_w);
}

template <const auto& Expr>
void compiled_into(benchmark::State& state) {
  auto& s = data();
  measure(state, [&] {
    eval_into(s.out, Expr, pa = s.a, pb = s.b, pc = s.c, pd = s.d);
    benchmark::DoNotOptimize(s.out.data());
  });
}

template <const auto& Expr>
void compiled_eval(benchmark::State& state) {
  auto& s = data();
  measure(state, [&] {
    auto r = eval(Expr, pa = s.a, pb = s.b, pc = s.c, pd = s.d);
    benchmark::DoNotOptimize(r.data());
  });
}

// Argument: the tile size in elements; 0 runs unfused, -1 with the default options (the tile chosen
// per pass: 128 elements for these 2^24-element passes).
interpreter interpreter_for(const graph& g, std::int64_t tile, bool native = false) {
  interpreter_options options;  // field by field: designated initialisers warn about every member left out
  options.fuse = tile != 0;
  if (tile > 0) options.tile_elements = std::size_t(tile);
  options.native_passes = native;
  return interpreter(g, options);
}

template <const auto& Expr>
void interpreted(benchmark::State& state) {
  auto& s = data();
  const interpreter run = interpreter_for(loaded_graph(Expr), state.range(0));
  measure(state, [&] {
    auto r = run.run(s.feeds);
    benchmark::DoNotOptimize(r[0].bytes());
  });
  state.counters["passes"] = double(run.last_stats().fused_groups);
}

template <const auto& Expr>
void interpreted_into(benchmark::State& state) {
  auto& s = data();
  const interpreter run = interpreter_for(loaded_graph(Expr), state.range(0));
  std::vector<runtime_tensor> outputs;
  measure(state, [&] {
    run.run_into(outputs, s.feeds);
    benchmark::DoNotOptimize(outputs[0].bytes());
  });
  state.counters["passes"] = double(run.last_stats().fused_groups);
}

template <const auto& Expr>
void interpreted_native_into(benchmark::State& state) {
  auto& s = data();
  const interpreter run = interpreter_for(loaded_graph(Expr), state.range(0), true);
  std::vector<runtime_tensor> outputs;
  run.run_into(outputs, s.feeds);  // compiles (or loads) the pass
  if (run.last_stats().native_passes != 1) {
    state.SkipWithError(("no generated pass: " + pass_library::global().last_error()).c_str());
    return;
  }
  measure(state, [&] {
    run.run_into(outputs, s.feeds);
    benchmark::DoNotOptimize(outputs[0].bytes());
  });
  state.counters["passes"] = double(run.last_stats().fused_groups);
}

void read4_write1(benchmark::State& state) {
  auto& s = data();
  measure(state, [&] { bench::read4_write1(s.a.data(), s.b.data(), s.c.data(), s.d.data(), s.out.data(), n); });
}

void read4_write1_streaming(benchmark::State& state) {
  auto& s = data();
  measure(state, [&] { bench::read4_write1_streaming(s.a.data(), s.b.data(), s.c.data(), s.d.data(), s.out.data(), n); });
}

// --- building a runtime graph's gradient and plan ---------------------------------------------------

graph_handle layer_norm_of(graph_handle x) {
  auto mu = reduce_value(ops::mean_op{}, x, {-1}, true);
  auto d = x - mu;
  auto var = reduce_value(ops::mean_op{}, square(d), {-1}, true);
  return d * x.builder->apply("rsqrt", {var + 1e-5});
}
graph_handle gelu_of(graph_handle x) { return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x))); }

// layers = 0: the relu MLP; otherwise that many LN+GELU hidden layers.
graph runtime_model(int layers) {
  graph_builder b;
  auto x = b.input("x", dtype::f32, {-1, 784});
  auto labels = b.input("labels", dtype::i32, {-1});
  if (layers == 0) {
    auto W1 = b.parameter("W1", dtype::f32, {784, 256});
    auto b1 = b.parameter("b1", dtype::f32, {256});
    auto W2 = b.parameter("W2", dtype::f32, {256, 10});
    auto b2 = b.parameter("b2", dtype::f32, {10});
    auto z = matmul(relu(matmul(x, W1) + b1), W2) + b2;
    auto per_example = reduce_value(ops::sum_op{}, one_hot(labels, 10) * -log_softmax(z), {1}, false);
    return b.build({reduce_value(ops::mean_op{}, per_example, {}, false)});
  }
  graph_handle h = x;
  std::int64_t in = 784;
  for (int l = 0; l < layers; ++l) {
    const std::string k = std::to_string(l);
    auto W = b.parameter("W" + k, dtype::f32, {in, 256});
    auto bias = b.parameter("b" + k, dtype::f32, {256});
    auto gain = b.parameter("g" + k, dtype::f32, {256});
    auto beta = b.parameter("beta" + k, dtype::f32, {256});
    h = gelu_of(layer_norm_of(matmul(h, W) + bias) * gain + beta);
    in = 256;
  }
  auto Wo = b.parameter("Wo", dtype::f32, {in, 10});
  auto bo = b.parameter("bo", dtype::f32, {10});
  auto z = matmul(h, Wo) + bo;
  return b.build({reduce_value(ops::mean_op{}, b.apply("softmax_cross_entropy", {z, labels}), {}, false)});
}

std::vector<std::string> parameter_names(const graph& g) {
  std::vector<std::string> out;
  for (const auto& p : g.parameters) out.push_back(p.name);
  return out;
}

// The interpreter's plan for a batch of 256 (what its first run computes before any work).
std::shared_ptr<const runtime_plan> plan_of(const graph& g, const std::shared_ptr<const graph_structure>& s) {
  std::vector<dtype> types;
  std::vector<runtime_extents> extents;
  auto leaf = [&](const graph_type& t) {
    types.push_back(t.type);
    runtime_extents e;
    for (auto x : t.shape) e.push_back(x < 0 ? 256 : std::size_t(x));
    extents.push_back(std::move(e));
  };
  for (const auto& l : g.inputs) leaf(l.type);
  for (const auto& l : g.parameters) leaf(l.type);
  for (const auto& c : g.constants) leaf(c.type);
  return plan_for(g, s, std::move(types), std::move(extents), true);
}

void clear_graph_caches() {
  runtime_plan_cache().clear();
  gradient_cache().clear();
}

enum class phase { build, differentiate_uncached, differentiate_cached, interpreter, plan_uncached, plan_cached,
                   rebuild_uncached, rebuild_cached };

template <phase P>
void grad_and_plan(benchmark::State& state) {
  const int layers = int(state.range(0));
  const graph g = runtime_model(layers);
  const auto wrt = parameter_names(g);
  clear_graph_caches();
  const graph dg = differentiate(g, wrt);
  const interpreter run(dg);
  const auto structure = std::make_shared<const graph_structure>(dg);
  (void)plan_of(dg, structure);
  for (auto _ : state) {
    if constexpr (P == phase::build) {
      benchmark::DoNotOptimize(runtime_model(layers));
    } else if constexpr (P == phase::differentiate_uncached || P == phase::differentiate_cached) {
      if (P == phase::differentiate_uncached) gradient_cache().clear();
      benchmark::DoNotOptimize(differentiate(g, wrt));
    } else if constexpr (P == phase::interpreter) {
      benchmark::DoNotOptimize(interpreter(dg));
    } else if constexpr (P == phase::plan_uncached || P == phase::plan_cached) {
      if (P == phase::plan_uncached) runtime_plan_cache().clear();
      benchmark::DoNotOptimize(plan_of(dg, structure));
    } else {
      if (P == phase::rebuild_uncached) clear_graph_caches();
      const graph rebuilt = runtime_model(layers);
      const interpreter r(differentiate(rebuilt, wrt));
      benchmark::DoNotOptimize(plan_of(r.source(), r.structure()));
    }
  }
  state.counters["nodes"] = double(g.nodes.size());
  state.counters["grad_nodes"] = double(dg.nodes.size());
}

#define SYMFLOW_PLAN_BENCH(p)                                                                   \
  BENCHMARK(grad_and_plan<phase::p>)                                                            \
      ->Name("BM_runtime_grad_and_plan/" #p)                                                    \
      ->ArgName("lngelu_layers")->Arg(0)->Arg(8)                                                \
      ->Unit(benchmark::kMicrosecond)
SYMFLOW_PLAN_BENCH(build);
SYMFLOW_PLAN_BENCH(differentiate_uncached);
SYMFLOW_PLAN_BENCH(differentiate_cached);
SYMFLOW_PLAN_BENCH(interpreter);
SYMFLOW_PLAN_BENCH(plan_uncached);
SYMFLOW_PLAN_BENCH(plan_cached);
SYMFLOW_PLAN_BENCH(rebuild_uncached);
SYMFLOW_PLAN_BENCH(rebuild_cached);

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

#define SYMFLOW_BENCH(fn, name) \
  BENCHMARK(fn)->Name(name)->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", min_of)
#define SYMFLOW_BENCH_TILES(fn, name) \
  SYMFLOW_BENCH(fn, name)->ArgName("tile")->Arg(-1)->Arg(128)->Arg(256)->Arg(512)->Arg(2048)

SYMFLOW_BENCH(read4_write1, "BM_floor/read4_write1");
SYMFLOW_BENCH(read4_write1_streaming, "BM_floor/read4_write1_streaming");
SYMFLOW_BENCH(compiled_into<w1>, "BM_W1/compiled_into");
SYMFLOW_BENCH(compiled_eval<w1>, "BM_W1/compiled_eval");
SYMFLOW_BENCH_TILES(interpreted<w1>, "BM_W1/interpreter");
SYMFLOW_BENCH_TILES(interpreted_into<w1>, "BM_W1/interpreter_into");
SYMFLOW_BENCH(interpreted_into<w1>, "BM_W1/interpreter_unfused")->ArgName("tile")->Arg(0);
SYMFLOW_BENCH_TILES(interpreted_native_into<w1>, "BM_W1/interpreter_native_into");
SYMFLOW_BENCH(compiled_into<w2>, "BM_W2/compiled_into");
SYMFLOW_BENCH(compiled_eval<w2>, "BM_W2/compiled_eval");
SYMFLOW_BENCH_TILES(interpreted<w2>, "BM_W2/interpreter");
SYMFLOW_BENCH_TILES(interpreted_into<w2>, "BM_W2/interpreter_into");
SYMFLOW_BENCH(interpreted_into<w2>, "BM_W2/interpreter_unfused")->ArgName("tile")->Arg(0);
SYMFLOW_BENCH_TILES(interpreted_native_into<w2>, "BM_W2/interpreter_native_into");

}  // namespace

BENCHMARK_MAIN();
