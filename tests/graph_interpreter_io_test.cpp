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
