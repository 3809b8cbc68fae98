// The interpreter on whole models and loaded graphs: the example model saved, loaded and
// differentiated; W1/W2 fused into one group each; large outputs streamed; what a run computes
// (stats); graphs loaded from JSON and binary; the errors a bad feed gets.
//
// Compiled with -ffp-contract=off (tests/CMakeLists.txt), as graph_interpreter_test.cpp: see there.
#include "graph_interpreter_support.hpp"

// |a - b| <= tolerance * max |a|, over a whole tensor; the message names the worst element.
::testing::AssertionResult close_relative_to_scale(const runtime_tensor& want, const runtime_tensor& got, double tolerance) {
  if (want.type() != got.type() || want.extents() != got.extents())
    return ::testing::AssertionFailure() << "expected " << want.type_string() << ", got " << got.type_string();
  const float* a = want.data<float>();
  const float* b = got.data<float>();
  double scale = 0, worst = 0;
  std::size_t at = 0;
  for (std::size_t q = 0; q < want.size(); ++q) scale = std::max(scale, double(std::abs(a[q])));
  for (std::size_t q = 0; q < want.size(); ++q)
    if (double e = std::abs(double(a[q]) - double(b[q])); e > worst) worst = e, at = q;
  if (worst <= tolerance * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "element " << at << ": " << a[at] << " vs " << b[at] << " (scale " << scale << ")";
}

// The example pair's promise (examples/graph_save.cpp, graph_load.cpp): the model saved as a graph
// file and loaded by a program that never saw its type computes what the type computes, and the
// loaded graph differentiated at run time gives the gradients the type's compile-time grad gives.
TEST(GraphInterpreter, TheExampleModelSavedAndLoadedRunsAndDifferentiatesLikeItsType) {
  const graph_example::model mdl;
  const params store = graph_example::initial_parameters(2026);
  const auto data = graph_example::random_batch(6, 64);
  const auto loss = mdl.loss();
  const auto logits = mdl.logits();
  const auto [dW1, db1, dW2, db2] = grad(loss, mdl.W1, mdl.b1, mdl.W2, mdl.b2);
  const auto compiled = eval(loss, logits, dW1, db1, dW2, db2, mdl.x = data.x, mdl.labels = data.labels, store);
  const std::vector<runtime_tensor> want{runtime_tensor(std::get<0>(compiled)), runtime_tensor(std::get<1>(compiled)),
                                         runtime_tensor(std::get<2>(compiled)), runtime_tensor(std::get<3>(compiled)),
                                         runtime_tensor(std::get<4>(compiled)), runtime_tensor(std::get<5>(compiled))};
  const runtime_feeds feeds{{"x", runtime_tensor(data.x)}, {"labels", runtime_tensor(data.labels)}};
  // Softmax's sums and the mean accumulate in another order than compiled (double vs float partial
  // sums); everything downstream of them carries that difference: compared relative to each
  // tensor's scale.
  auto expect_close = [&](const std::vector<runtime_tensor>& got, const std::vector<std::size_t>& which, const char* what) {
    ASSERT_EQ(got.size(), which.size()) << what;
    for (std::size_t o = 0; o < which.size(); ++o)
      EXPECT_TRUE(close_relative_to_scale(want[which[o]], got[o], o < 2 ? 1e-6 : 1e-5)) << what << ", output " << o;
  };

  // The type's graph with its gradients, in memory.
  const graph in_memory = to_graph(loss, logits, dW1, db1, dW2, db2);
  const auto fused = interpreter(in_memory).run(feeds, &store);
  expect_close(fused, {0, 1, 2, 3, 4, 5}, "in memory");
  // The logits need no sum: matmul (the same GEMM), bias and relu give the same bits.
  EXPECT_EQ(compare(want[1], fused[1]).max_ulps, 0u) << compare(want[1], fused[1]).what;
  // Unfused, exp(logits - max) runs over the stored difference instead of rows of 4 (scalar tails):
  // a few ulps there, then carried through the softmax and the gradients' matmuls.
  const auto unfused = interpreter(in_memory, unfused_options()).run(feeds, &store);
  for (std::size_t o = 0; o < fused.size(); ++o) EXPECT_TRUE(close_relative_to_scale(fused[o], unfused[o], 1e-6)) << o;

  // What graph_save writes and graph_load reads: loss and logits, parameters embedded, binary.
  graph saved = to_graph(loss, logits);
  embed_parameters(saved, store);
  const std::string path = ::testing::TempDir() + "graph_interpreter_test_model.sfg";
  save_graph_binary_file(path, saved, {.embed_parameters = true});
  const graph loaded = load_graph_binary_file(path);
  std::remove(path.c_str());
  const auto run_loaded = interpreter(loaded).run(feeds);
  expect_close(run_loaded, {0, 1}, "loaded");
  // The same graph, the same bits, whether it came from the type or from the file.
  const auto run_saved = interpreter(saved).run(feeds);
  for (std::size_t o = 0; o < 2; ++o) EXPECT_EQ(compare(run_saved[o], run_loaded[o]).max_ulps, 0u) << o;
#ifdef SYMFLOW_HAS_RUNTIME_GRAD
  const graph differentiated = differentiate(loaded, {"W1", "b1", "W2", "b2"});
  expect_close(interpreter(differentiated).run(feeds), {0, 1, 2, 3, 4, 5}, "differentiated at run time");
#endif
}

const auto a = placeholder<"a", float, shape<dyn>>();
const auto b = placeholder<"b", float, shape<dyn>>();
const auto c = placeholder<"c", float, shape<dyn>>();
const auto e = placeholder<"e", float, shape<dyn>>();  // W1/W2's d

struct workload_inputs {
  std::mt19937 rng{16};
  // Over the parallel threshold (2^15), with a scalar tail.
  static constexpr std::size_t n = (std::size_t(1) << 16) + 17;
  tensor<float, shape<dyn>> a = random_tensor<float, shape<dyn>>(rng, {n}, -2, 2);
  tensor<float, shape<dyn>> b = random_tensor<float, shape<dyn>>(rng, {n}, -2, 2);
  tensor<float, shape<dyn>> c = random_tensor<float, shape<dyn>>(rng, {n}, -2, 2);
  tensor<float, shape<dyn>> e = random_tensor<float, shape<dyn>>(rng, {n}, -2, 2);
};

TEST(GraphInterpreter, W1AndW2FuseIntoOneGroupEachAndMatchCompiledBitwise) {
  workload_inputs in;
  const auto w1 = expect_bitwise(std::tuple{a * b + c * sin(e)}, a = in.a, b = in.b, c = in.c, e = in.e);
  EXPECT_EQ(w1.stats.fused_groups, 1u);
  EXPECT_EQ(w1.stats.fused_nodes, 4u);
  EXPECT_EQ(w1.stats.materialised_values, 1u);
  const auto w2 = expect_bitwise(std::tuple{tanh(a * b + c) * exp(-e * e) + 0.5f * a}, a = in.a, b = in.b, c = in.c, e = in.e);
  EXPECT_EQ(w2.stats.fused_groups, 1u);
  EXPECT_EQ(w2.stats.fused_nodes, 9u);
  EXPECT_EQ(w2.stats.materialised_values, 1u);
  // Unfused, every op is a pass of its own.
  interpreter unfused(w2.lowered, unfused_options());
  unfused.run(sources_for(w2.lowered, a = in.a, b = in.b, c = in.c, e = in.e).feeds);
  EXPECT_EQ(unfused.last_stats().fused_groups, 9u);
  EXPECT_EQ(unfused.last_stats().materialised_values, 9u);
  // Every tile size gives the same bits: tiles are rounded up to the SIMD packet grid, so the same
  // elements fall into packets and into scalar tails.
  for (std::size_t tile : {1, 16, 100, 256, 2048}) {
    interpreter tiled(w2.lowered, tiled_options(tile));
    const auto out = tiled.run(sources_for(w2.lowered, a = in.a, b = in.b, c = in.c, e = in.e).feeds);
    EXPECT_EQ(compare(w2.fused[0], out[0]).max_ulps, 0u) << "tile " << tile;
  }
}

// Stored values of at least cpu::streaming_store_bytes (16 MiB) are computed into a tile buffer and
// copied out with streaming stores; a stored value that later members read is read back from that
// buffer. Rows that do not start on a packet boundary take ordinary stores up to it.
TEST(GraphInterpreter, LargeOutputsAreStreamedAndStayBitwiseEqual) {
  constexpr std::size_t n = (std::size_t(1) << 22) + 17;  // 16 MiB + 68 bytes of f32
  static_assert(n * sizeof(float) >= cpu::streaming_store_bytes);
  std::mt19937 rng{22};
  const auto big = [&] { return random_tensor<float, shape<dyn>>(rng, {n}, -2, 2); };
  const auto ta = big(), tb = big(), tc = big(), te = big();
  const auto s = a * b + c;  // an output, and read by the members after it
  const auto r = expect_bitwise(std::tuple{s, tanh(s) * exp(-e * e) + 0.5f * a}, a = ta, b = tb, c = tc, e = te);
  EXPECT_EQ(r.stats.fused_groups, 1u);
  EXPECT_EQ(r.stats.materialised_values, 2u);

  constexpr std::size_t wide = 4099;  // rows of 4099 floats: most rows start off the packet grid
  const auto bx = placeholder<"big_x", float, shape<dyn, wide>>();
  const auto bw = placeholder<"big_w", float, shape<wide>>();
  const auto tx = random_tensor<float, shape<dyn, wide>>(rng, {1025, wide}, -3, 3);
  const auto tw = random_tensor<float, shape<wide>>(rng, {wide}, -2, 2);
  static_assert(1025 * wide * sizeof(float) >= cpu::streaming_store_bytes);
  // Fused only: unfused, sin runs over the stored product as one row and rounds row tails
  // differently (BroadcastRowsMatchCompiledFusedAndWithinPacketErrorUnfused).
  const auto rows_out = evaluate_both_ways(std::tuple{sin(bx * bw) + bx}, bx = tx, bw = tw);
  EXPECT_EQ(compare(std::get<0>(rows_out.compiled), rows_out.fused[0]).max_ulps, 0u);
  EXPECT_EQ(rows_out.stats.fused_groups, 1u);
}

TEST(GraphInterpreter, OutputsComputeOnlyWhatTheyNeed) {
  workload_inputs in;
  graph g = to_graph(sin(a) * 2.0f, exp(b) + c, a - b);
  g.outputs = {g.outputs[0]};  // exp, add and sub are now dead
  interpreter run(g);
  const auto out = run.run(sources_for(g, a = in.a, b = in.b, c = in.c).feeds);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(run.last_stats().fused_groups, 1u);
  EXPECT_EQ(run.last_stats().fused_nodes, 2u);  // sin, mul
  EXPECT_EQ(run.last_stats().materialised_values, 1u);
  EXPECT_EQ(compare(eval(sin(a) * 2.0f, a = in.a), out[0]).max_ulps, 0u);
  // An output that is a leaf or repeats is copied out, once per mention.
  graph twice = to_graph(a, a * 3.0f, a * 3.0f);
  const auto outs = interpreter(twice).run(sources_for(twice, a = in.a).feeds);
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(compare(in.a, outs[0]).max_ulps, 0u);
  EXPECT_EQ(compare(outs[1], outs[2]).max_ulps, 0u);
  EXPECT_NE(outs[1].bytes(), outs[2].bytes());
}

TEST(GraphInterpreter, GraphsLoadedFromJsonAndBinaryRunLikeTheOriginal) {
  const graph_example::model mdl;
  const params store = graph_example::initial_parameters(7);
  const auto data = graph_example::random_batch(8, 10);
  graph g = to_graph(mdl.loss(), mdl.logits());
  const runtime_feeds feeds{{"x", runtime_tensor(data.x)}, {"labels", runtime_tensor(data.labels)}};
  const auto original = interpreter(g).run(feeds, &store);
  embed_parameters(g, store);
  for (const graph& loaded : {load_graph_json(save_graph_json(g)), load_graph_binary(save_graph_binary(g))}) {
    const auto got = interpreter(loaded).run(feeds);  // parameters from the file
    ASSERT_EQ(got.size(), original.size());
    for (std::size_t o = 0; o < got.size(); ++o) EXPECT_EQ(compare(original[o], got[o]).max_ulps, 0u) << o;
  }
}

template <class Error, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& err) {
    static_assert(std::is_base_of_v<symflow::error, Error>);
    return err.what();
  }
  ADD_FAILURE() << "no exception";
  return {};
}

TEST(GraphInterpreter, BadFeedsAreNamed) {
  elementwise_inputs in;
  const graph g = to_graph(maximum(x, y) * w);
  params store;
  store.set("w", in.w);
  const interpreter run(g);
  const runtime_feeds good{{"x", runtime_tensor(in.x)}, {"y", runtime_tensor(in.y)}};
  EXPECT_NO_THROW(run.run(good, &store));

  runtime_feeds missing{{"x", runtime_tensor(in.x)}};
  EXPECT_EQ(message_of<value_error>([&] { run.run(missing, &store); }), "interpreter: no feed for input 'y'");

  runtime_feeds wrong_dtype = good;
  wrong_dtype.insert_or_assign("y", runtime_tensor(in.d));
  EXPECT_EQ(message_of<shape_error>([&] { run.run(wrong_dtype, &store); }),
            "interpreter: input 'y' is f64[33,21], the graph expects f32[?,21]");

  runtime_feeds wrong_shape = good;
  wrong_shape.insert_or_assign("x", runtime_tensor(runtime_tensor(dtype::f32, {33, 20})));
  EXPECT_EQ(message_of<shape_error>([&] { run.run(wrong_shape, &store); }),
            "interpreter: input 'x' is f32[33,20], the graph expects f32[?,21]");

  runtime_feeds wrong_rank = good;
  wrong_rank.insert_or_assign("x", runtime_tensor(dtype::f32, {21}));
  EXPECT_EQ(message_of<shape_error>([&] { run.run(wrong_rank, &store); }),
            "interpreter: input 'x' is f32[21], the graph expects f32[?,21]");

  // Each feed fits the graph's type, but their unknown extents disagree: the node that meets them
  // says so, with its op, scoped name, source line and both shapes.
  runtime_feeds mismatch = good;
  mismatch.insert_or_assign("y", runtime_tensor(dtype::f32, {34, 21}));
  const std::string msg = message_of<shape_error>([&] { run.run(mismatch, &store); });
  const graph_node& max_node = node_named(g, "maximum");
  EXPECT_EQ(msg.rfind("maximum 'maximum' (" + max_node.where.file + ":" + std::to_string(max_node.where.line) + "): ", 0), 0u)
      << msg;
  EXPECT_NE(msg.find("cannot broadcast [33,21] and [34,21]"), std::string::npos) << msg;

  const auto W = variable<"W", float, shape<dyn, 13>>();
  const graph product = to_graph(scope("dense", [&] { return matmul(x, W); }));
  params wrong_inner;
  wrong_inner.set("W", tensor<float, shape<dyn, 13>>(extents_t<2>{20, 13}, 0.f));
  const runtime_feeds only_x{{"x", runtime_tensor(in.x)}};
  const std::string mm = message_of<shape_error>([&] { interpreter(product).run(only_x, &wrong_inner); });
  EXPECT_NE(mm.find("matmul 'dense/matmul'"), std::string::npos) << mm;
  EXPECT_NE(mm.find("cannot multiply [33,21] by [20,13]"), std::string::npos) << mm;

  EXPECT_EQ(message_of<value_error>([&] { run.run(good); }),
            "interpreter: no value for parameter 'w' (neither in the parameter store nor embedded in the graph)");
  params wrong_param;
  wrong_param.set("w", tensor<float, shape<4>>{});
  EXPECT_EQ(message_of<shape_error>([&] { run.run(good, &wrong_param); }),
            "interpreter: parameter 'w' is f32[4], the graph expects f32[21]");

  // A feed naming nothing in the graph (a typo, say) is refused with the names listed, unless the
  // options allow extra feeds; a feed naming a parameter replaces the store's value, as in eval.
  runtime_feeds extra = good;
  extra.insert_or_assign("z", runtime_tensor(in.x));
  extra.insert_or_assign("typo_x", runtime_tensor(in.x));
  EXPECT_EQ(message_of<value_error>([&] { run.run(extra, &store); }),
            "interpreter: 2 feed(s) name no input or parameter of the graph: 'typo_x', 'z' "
            "(set interpreter_options::allow_unused_feeds to pass extra feeds)");
  interpreter_options lenient;
  lenient.allow_unused_feeds = true;
  const auto with_extra = interpreter(g, lenient).run(extra, &store);
  const auto without = run.run(good, &store);
  EXPECT_EQ(std::memcmp(with_extra[0].bytes(), without[0].bytes(), without[0].byte_size()), 0);
  runtime_feeds fed_parameter = good;
  fed_parameter.insert_or_assign("w", runtime_tensor(in.w));
  const auto fed = run.run(fed_parameter, &wrong_param);  // the feed wins over the store's f32[4]
  EXPECT_EQ(std::memcmp(fed[0].bytes(), without[0].bytes(), without[0].byte_size()), 0);
}

}  // namespace

#ifdef SYMFLOW_HAS_RUNTIME_GRAD
// Layer norm and tanh-GELU composed from primitive ops, as a user writes them, and its loss in
// float64 by hand (the reference the gradient below is checked against).
const auto ln_x = placeholder<"ln_x", float, shape<dyn, 29>>();
const auto ln_w = placeholder<"ln_w", float, shape<dyn, 5>>();
const auto ln_v = variable<"ln_v", float, shape<29, 5>>();
const auto ln_gamma = variable<"ln_gamma", float, shape<29>>();
const auto ln_beta = variable<"ln_beta", float, shape<29>>();
auto ln_gelu_loss() {
  auto mu = mean(ln_x, axes<-1>, keepdims);
  auto c = ln_x - mu;
  auto var = mean(c * c, axes<-1>, keepdims);
  auto u = c * rsqrt(var + 1e-5f) * ln_gamma + ln_beta;
  auto h = 0.5f * u * (1.f + tanh(0.7978845608f * (u + 0.044715f * u * u * u)));
  return sum(matmul(h, ln_v) * ln_w);  // a GEMM between the forward and the backward passes
}
double ln_gelu_loss_f64(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& gamma,
                        const std::vector<double>& beta, const std::vector<double>& v, std::size_t rows) {
  constexpr std::size_t n = 29;
  double total = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (std::size_t j = 0; j < n; ++j) mu += x[r * n + j];
    mu /= n;
    for (std::size_t j = 0; j < n; ++j) var += (x[r * n + j] - mu) * (x[r * n + j] - mu);
    var /= n;
    for (std::size_t j = 0; j < n; ++j) {
      const double u = (x[r * n + j] - mu) / std::sqrt(var + 1e-5) * gamma[j] + beta[j];
      const double h = 0.5 * u * (1 + std::tanh(0.7978845608 * (u + 0.044715 * u * u * u)));
      for (std::size_t k = 0; k < 5; ++k) total += h * v[j * 5 + k] * w[r * 5 + k];
    }
  }
  return total;
}

// The backward passes of a composed layer norm + GELU read seven [rows, 29] intermediates of the
// forward pass; with recomputation they compute them again from what the forward pass read (the
// centred input, the rows' 1/sigma, gamma, beta), and the forward pass stores only what a
// reduction or an output needs. The same kernels on the same operands: the same bits, on rows with
// NaN, infinities, -0 and an odd width, whatever the tile.
TEST(GraphInterpreter, FusedPassesRecomputeForwardValuesInsteadOfReadingThemBackBitwise) {
  std::mt19937 rng{1203};
  constexpr std::size_t rows = 37;
  auto xv = random_tensor<float, shape<dyn, 29>>(rng, {rows, 29}, -3, 3);
  const auto wv = random_tensor<float, shape<dyn, 5>>(rng, {rows, 5}, -1, 1);
  const auto vv = random_tensor<float, shape<29, 5>>(rng, {29, 5}, -1, 1);
  const auto gv = random_tensor<float, shape<29>>(rng, {29}, 0.5, 1.5);
  const auto bv = random_tensor<float, shape<29>>(rng, {29}, -0.5, 0.5);
  xv(3, 4) = std::numeric_limits<float>::quiet_NaN();
  xv(5, 0) = std::numeric_limits<float>::infinity();
  for (std::size_t j = 0; j < 29; ++j) xv(7, j) = -0.f;  // a constant row: var = 0
  const graph g = differentiate(to_graph(ln_gelu_loss()), {"ln_x", "ln_gamma", "ln_beta"});
  const auto sources = sources_for(g, ln_x = xv, ln_w = wv, ln_v = vv, ln_gamma = gv, ln_beta = bv);

  interpreter_options stored_only;
  stored_only.recompute = false;
  stored_only.fuse_row_reductions = false;
  interpreter reference(g, stored_only), recomputing(g);
  const auto want = reference.run(sources.feeds, &sources.store);
  const auto got = recomputing.run(sources.feeds, &sources.store);
  ASSERT_EQ(want.size(), 4u);
  for (std::size_t o = 0; o < want.size(); ++o) EXPECT_EQ(compare(want[o], got[o]).max_ulps, 0u) << "output " << o;
  EXPECT_EQ(reference.last_stats().recomputed_nodes, 0u);
  EXPECT_EQ(reference.last_stats().fused_reductions, 0u);
  EXPECT_GE(recomputing.last_stats().recomputed_nodes, 7u);
  // mean((x - mu)^2) forward; the row sums of layer norm's gradient backward.
  EXPECT_GE(recomputing.last_stats().fused_reductions, 3u);
  EXPECT_LE(recomputing.last_stats().materialised_values + 5, reference.last_stats().materialised_values)
      << "stored with recomputation " << recomputing.last_stats().materialised_values << ", without "
      << reference.last_stats().materialised_values;
  for (std::size_t tile : {16, 100, 2048}) {
    interpreter_options o = tiled_options(tile);
    const auto out = interpreter(g, o).run(sources.feeds, &sources.store);
    for (std::size_t k = 0; k < want.size(); ++k) EXPECT_EQ(compare(want[k], out[k]).max_ulps, 0u) << "tile " << tile;
  }
  // Runs that check numerics store every value they check: nothing is recomputed.
  interpreter_options checked;
  checked.check_numerics = true;
  interpreter checking(g, checked);
  EXPECT_THROW(checking.run(sources.feeds, &sources.store), numerics_error);
  EXPECT_EQ(checking.last_stats().recomputed_nodes, 0u);
  EXPECT_EQ(checking.last_stats().fused_reductions, 0u);

  // The rows without NaN or infinity against float64 central differences of the loss.
  std::vector<double> x(xv.data(), xv.data() + xv.size()), w(wv.data(), wv.data() + wv.size());
  std::vector<double> gamma(gv.data(), gv.data() + 29), beta(bv.data(), bv.data() + 29), v(vv.data(), vv.data() + vv.size());
  for (std::size_t r : {3, 5, 7})  // rows left out of the reference
    for (std::size_t j = 0; j < 29; ++j) x[r * 29 + j] = 0;
  const float* dgamma = got[2].data<float>();
  const auto clean = sources_for(g, ln_x = [&] {
    auto t = xv;
    for (std::size_t j = 0; j < 29; ++j) t(3, j) = t(5, j) = t(7, j) = 0.f;
    return t;
  }(), ln_w = wv, ln_v = vv, ln_gamma = gv, ln_beta = bv);
  const auto finite = recomputing.run(clean.feeds, &clean.store);
  EXPECT_TRUE(std::isnan(dgamma[4]));  // the NaN row reaches every column's gamma gradient
  for (std::size_t j = 0; j < 29; ++j) {
    const double h = 1e-5;
    auto up = gamma, down = gamma;
    up[j] += h;
    down[j] -= h;
    const double fd = (ln_gelu_loss_f64(x, w, up, beta, v, rows) - ln_gelu_loss_f64(x, w, down, beta, v, rows)) / (2 * h);
    EXPECT_NEAR(finite[2].data<float>()[j], fd, 1e-4 * (1 + std::abs(fd))) << "d loss / d gamma[" << j << "]";
  }
  for (std::size_t r = 0; r < rows; r += 6)
    for (std::size_t j = 0; j < 29; j += 5) {
      const double h = 1e-5;
      auto up = x, down = x;
      up[r * 29 + j] += h;
      down[r * 29 + j] -= h;
      const double fd = (ln_gelu_loss_f64(up, w, gamma, beta, v, rows) - ln_gelu_loss_f64(down, w, gamma, beta, v, rows)) / (2 * h);
      EXPECT_NEAR(finite[1].data<float>()[r * 29 + j], fd, 1e-4 * (1 + std::abs(fd))) << "d loss / d x[" << r << ", " << j << "]";
    }
}
#endif

// Reductions over the last axis run in the pass computing their operand, on tiles of whole rows:
// rows of 24 elements (tiles of 48, on the packet grid), an operand broadcast along the first axis
// (the pass's index space is [n, 72]: threads' shares start on whole rows of it), over the parallel
// threshold, keepdims or not, NaN, infinity and -0 among the inputs. The same bits as the
// reductions run as units of their own; float64 sums as the reference.
TEST(GraphInterpreter, RowReductionsRunInTheirOperandsPassBitwise) {
  const auto rp = placeholder<"rp", float, shape<dyn, 3, 24>>();
  const auto rq = placeholder<"rq", float, shape<3, 24>>();
  std::mt19937 rng{24};
  constexpr std::size_t n = 1001;  // 72072 elements: over cpu::parallel_threshold
  auto pv = random_tensor<float, shape<dyn, 3, 24>>(rng, {n, 3, 24}, -2, 2);
  const auto qv = random_tensor<float, shape<3, 24>>(rng, {3, 24}, -2, 2);
  pv(5, 1, 3) = std::numeric_limits<float>::quiet_NaN();
  pv(9, 2, 0) = -std::numeric_limits<float>::infinity();
  pv(11, 0, 7) = -0.f;
  const graph g = to_graph(sum(sin(rp) * rq, axes<-1>), mean(rp * rp + rq, axes<-1>, keepdims));
  const auto feeds = sources_for(g, rp = pv, rq = qv).feeds;
  interpreter_options separate;
  separate.fuse_row_reductions = false;
  interpreter fused(g), units(g, separate);
  const auto got = fused.run(feeds);
  const auto want = units.run(feeds);
  EXPECT_EQ(fused.last_stats().fused_reductions, 2u);
  EXPECT_EQ(units.last_stats().fused_reductions, 0u);
  EXPECT_LT(fused.last_stats().materialised_values, units.last_stats().materialised_values);
  ASSERT_EQ(got.size(), 2u);
  for (std::size_t o = 0; o < 2; ++o) EXPECT_EQ(compare(want[o], got[o]).max_ulps, 0u) << "output " << o;
  for (std::size_t tile : {16, 100, 4096}) {
    const auto out = interpreter(g, tiled_options(tile)).run(feeds);
    for (std::size_t o = 0; o < 2; ++o) EXPECT_EQ(compare(want[o], out[o]).max_ulps, 0u) << "tile " << tile;
  }
  ASSERT_EQ(got[0].extents(), (runtime_extents{n, 3}));
  ASSERT_EQ(got[1].extents(), (runtime_extents{n, 3, 1}));
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i < 3; ++i) {
      double s = 0, m = 0;
      for (std::size_t j = 0; j < 24; ++j) {
        const double x = pv(r, i, j);
        s += std::sin(x) * double(qv(i, j));
        m += x * x + double(qv(i, j));
      }
      m /= 24;
      const float fs = got[0].data<float>()[r * 3 + i], fm = got[1].data<float>()[r * 3 + i];
      if (std::isnan(s)) EXPECT_TRUE(std::isnan(fs)) << r << ", " << i;
      else EXPECT_NEAR(fs, s, 1e-5 * (1 + std::abs(s))) << r << ", " << i;
      if (std::isinf(m)) EXPECT_EQ(fm, float(m)) << r << ", " << i;
      else if (std::isnan(m)) EXPECT_TRUE(std::isnan(fm)) << r << ", " << i;
      else EXPECT_NEAR(fm, m, 1e-5 * (1 + std::abs(m))) << r << ", " << i;
    }
}

// A later run of the same plan rebinds the passes the first run built to its own memory
// (runtime/pass_cache.hpp): feeds elsewhere, with other values, another batch size (another plan)
// in between, another thread count, and scalars splat across the tile. Each run's outputs are
// those of a fresh interpreter, bit for bit, and of float64 arithmetic.
TEST(GraphInterpreter, FusedPassesAreReusedOnOtherMemoryBitwise) {
  const auto fp = placeholder<"fp", float, shape<dyn, 37>>();
  const auto fq = placeholder<"fq", float, shape<37>>();
  const auto fs = placeholder<"fs", float, shape<>>();
  const graph g = to_graph(exp(fp * fq) - fs * fp, sum(tanh(fp) + fs, axes<-1>));
  interpreter kept(g);
  std::mt19937 rng{37};
  for (int run = 0; run < 6; ++run) {
    const std::size_t rows = run == 3 ? 5 : 2001;  // 74037 elements: over cpu::parallel_threshold
    auto pv = random_tensor<float, shape<dyn, 37>>(rng, {rows, 37}, -2, 2);
    const auto qv = random_tensor<float, shape<37>>(rng, {37}, -1, 1);
    const tensor<float, shape<>> sv(float(run) - 2.5f);
    pv(1, 3) = std::numeric_limits<float>::quiet_NaN();
    pv(2, 36) = -0.f;
    pv(4, 0) = std::numeric_limits<float>::infinity();
    const auto feeds = sources_for(g, fp = pv, fq = qv, fs = sv).feeds;
    std::vector<runtime_tensor> got;
    {
      const cpu::serial_scope one_thread(run == 4);  // the lanes a 2-thread run made, used by one
      got = kept.run(feeds);
    }
    const auto want = interpreter(g).run(feeds);
    EXPECT_EQ(kept.last_stats().reused_passes, run == 0 || run == 3 ? 0u : kept.last_stats().fused_groups) << run;
    ASSERT_EQ(got.size(), 2u);
    for (std::size_t o = 0; o < 2; ++o) EXPECT_EQ(compare(want[o], got[o]).max_ulps, 0u) << "run " << run << " output " << o;
    for (std::size_t r = 0; r < rows; ++r) {
      double total = 0;
      for (std::size_t j = 0; j < 37; ++j) {
        const double x = pv(r, j);
        const double y = std::exp(x * double(qv[j])) - double(sv[0]) * x;
        total += std::tanh(x) + double(sv[0]);
        const float f = got[0].data<float>()[r * 37 + j];
        if (std::isnan(y)) EXPECT_TRUE(std::isnan(f)) << r << ", " << j;
        else if (std::isinf(y)) EXPECT_EQ(f, float(y)) << r << ", " << j;
        else EXPECT_NEAR(f, y, 1e-5 * (1 + std::abs(y))) << r << ", " << j;
      }
      const float f = got[1].data<float>()[r];
      if (std::isnan(total)) EXPECT_TRUE(std::isnan(f)) << r;
      else EXPECT_NEAR(f, total, 1e-4 * (1 + std::abs(total))) << r;
    }
  }
}
