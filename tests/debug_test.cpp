// Debugging: check_numerics — NaN and infinities found in outputs (fused into the passes), then localised by a
// node-by-node re-run to the node that produced them first, with its operands' health and the
// source line where it was written — on compiled evaluation and in the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include <symflow/debug/localise.hpp>
#include <symflow/graph/all.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {
tensor<float, shape<dyn, 4>> random_rows(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  tensor<float, shape<dyn, 4>> t(extents_t<2>{n, 4}, uninitialized);
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = u(rng);
  return t;
}
}  // namespace

TEST(CheckNumerics, OffByDefaultAndNaNFlowsThrough) {
  set_check_numerics(false);
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto t = random_rows(8, 1);
  auto y = eval(log(x - 2.0f), x = t);
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_TRUE(std::isnan(y.data()[i]));
}

TEST(CheckNumerics, NamesTheNodeThatFirstProducedNaNWithOperandsAndLocation) {
  check_numerics_scope on;
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto W = variable<"W", float, shape<4, 3>>();
  params p;
  tensor<float, shape<4, 3>> w(extents_t<2>{4, 3}, 0.25f);
  p.set("W", w);
  // probabilities in (0, 1); log(p - 1) is NaN everywhere: the log is the culprit, not its consumers.
  auto probs = scope("model", [&] { return sigmoid(matmul(x, W)); });
  const int line = __LINE__ + 1;
  auto loss = scope("loss", [&] { return -mean(exp(log(probs - 1.0f)) * 2.0f); });
  try {
    (void)eval(loss, x = random_rows(16, 2), p);
    FAIL() << "expected numerics_error";
  } catch (const numerics_error& e) {
    EXPECT_EQ(e.op(), "log");
    EXPECT_EQ(e.node(), "loss/log");
    EXPECT_NE(e.location().find("debug_test.cpp:" + std::to_string(line)), std::string::npos) << e.location();
    EXPECT_EQ(e.type(), dtype::f32);
    EXPECT_EQ(e.extents(), (std::vector<std::size_t>{16, 3}));
    EXPECT_EQ(e.health().nan, 48u);
    ASSERT_EQ(e.operands().size(), 1u);
    EXPECT_TRUE(e.operands()[0].health.healthy());
    EXPECT_LT(e.operands()[0].health.max, 0.0);
    EXPECT_NE(std::string(e.what()).find("operand 0: sub 'loss/sub'"), std::string::npos) << e.what();
  }
}

TEST(CheckNumerics, CountsInfinitiesBySignAndCoversMultiOutputAndGradients) {
  check_numerics_scope on;
  auto x = placeholder<"x", double, shape<dyn>>();
  tensor<double, shape<dyn>> t(extents_t<1>{6}, 0.0);
  for (std::size_t i = 0; i < 6; ++i) t[i] = double(i) - 2.0;  // -2 -1 0 1 2 3
  try {
    (void)eval(sum(x * x), 1.0 / x, x = t);  // 1/0 = +Inf
    FAIL() << "expected numerics_error";
  } catch (const numerics_error& e) {
    EXPECT_EQ(e.op(), "div");
    EXPECT_EQ(e.health().positive_infinity, 1u);
    EXPECT_EQ(e.health().negative_infinity, 0u);
    EXPECT_EQ(e.health().nan, 0u);
  }
  // d/dx sqrt(x) = 1/(2 sqrt(x)) is infinite at 0: found inside the gradient.
  auto y = placeholder<"y", double, shape<dyn>>();
  tensor<double, shape<dyn>> zero_and_more(extents_t<1>{3}, 1.0);
  zero_and_more[0] = 0.0;
  try {
    (void)eval(grad(sum(sqrt(y)), y), y = zero_and_more);
    FAIL() << "expected numerics_error";
  } catch (const numerics_error& e) {
    EXPECT_EQ(e.node().rfind("grad/", 0), 0u) << e.node();
    EXPECT_EQ(e.health().positive_infinity, 1u);
  }
}

// A checked evaluation that throws leaves the caller's output tensors as they were (a training loop
// that catches numerics_error still holds its last good values), single and multi-output alike.
TEST(CheckNumerics, EvalIntoWritesNothingWhenItThrows) {
  check_numerics_scope on;
  auto x = placeholder<"x", float, shape<dyn>>();
  tensor<float, shape<dyn>> feed(extents_t<1>{37}, 1.0f);
  feed[36] = -1.0f;  // log(-1) = NaN in the scalar tail of any SIMD width
  tensor<float, shape<dyn>> out(extents_t<1>{37}, 7.0f), doubled(extents_t<1>{37}, 8.0f);
  const float* before = out.data();
  EXPECT_THROW(eval_into(out, log(x), x = feed), numerics_error);
  EXPECT_THROW(eval_into(std::tie(doubled, out), x * 2.0f, log(x), x = feed), numerics_error);
  for (std::size_t i = 0; i < 37; ++i) ASSERT_EQ(out[i], 7.0f) << i;
  for (std::size_t i = 0; i < 37; ++i) ASSERT_EQ(doubled[i], 8.0f) << i;
  feed[36] = 1.0f;
  eval_into(std::tie(doubled, out), x * 2.0f, log(x), x = feed);
  EXPECT_EQ(out.data(), before);  // a good result lands in the caller's own memory
  EXPECT_EQ(out[36], 0.0f);
  EXPECT_EQ(doubled[0], 2.0f);
}

// When the node-by-node re-run finds nothing (here: a localiser that finds nothing stands in for a
// real disagreement between the fused loops and the interpreter), the error says so and still names
// the output's node and the counts the evaluation really produced.
void finds_nothing(const graph&, const runtime_feeds&, const params*) {}

TEST(CheckNumerics, ADisagreeingReRunStillNamesTheOutputAndItsCounts) {
  check_numerics_scope on;
  const nonfinite_localiser saved = nonfinite_localiser_hook().exchange(&finds_nothing);
  auto x = placeholder<"x", float, shape<dyn>>();
  tensor<float, shape<dyn>> feed(extents_t<1>{5}, 2.0f);
  feed[1] = 0.0f;
  feed[3] = -1.0f;
  try {
    (void)eval(x + 1.0f, scope("loss", [&] { return log(x); }), x = feed);
    nonfinite_localiser_hook().store(saved);
    FAIL() << "expected numerics_error";
  } catch (const numerics_error& e) {
    nonfinite_localiser_hook().store(saved);
    EXPECT_EQ(e.op(), "log");
    EXPECT_EQ(e.node(), "loss/log");
    EXPECT_EQ(e.extents(), (std::vector<std::size_t>{5}));
    EXPECT_EQ(e.health().nan, 1u);
    EXPECT_EQ(e.health().negative_infinity, 1u);
    EXPECT_EQ(e.health().size, 5u);
    EXPECT_NE(std::string(e.what()).find("output 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("disagree"), std::string::npos) << e.what();
  }
}

TEST(CheckNumerics, AFeedHoldingNaNIsReportedAtItsFirstConsumerWithTheFeedsHealth) {
  check_numerics_scope on;
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto t = random_rows(4, 3);
  t.data()[5] = std::numeric_limits<float>::quiet_NaN();
  try {
    (void)eval(tanh(x) + 1.0f, x = t);
    FAIL() << "expected numerics_error";
  } catch (const numerics_error& e) {
    EXPECT_EQ(e.op(), "tanh");
    ASSERT_EQ(e.operands().size(), 1u);
    EXPECT_EQ(e.operands()[0].health.nan, 1u);
    EXPECT_NE(e.operands()[0].description.find("input 'x'"), std::string::npos) << e.operands()[0].description;
  }
}

TEST(CheckNumerics, LargeFusedPassesDetectASingleBadElementAnywhere) {
  check_numerics_scope on;
  auto a = placeholder<"a", float, shape<dyn>>();
  const std::size_t n = (1u << 20) + 3;  // threads, packets and a scalar tail
  for (std::size_t bad : {std::size_t(0), n / 2 + 1, n - 1}) {
    tensor<float, shape<dyn>> t(extents_t<1>{n}, 2.0f);
    t[bad] = 0.0f;
    EXPECT_THROW((void)eval(a * 3.0f + log(a), a = t), numerics_error) << bad;
  }
  tensor<float, shape<dyn>> fine(extents_t<1>{n}, 2.0f);
  EXPECT_NO_THROW((void)eval(a * 3.0f + log(a), a = fine));
}

TEST(CheckNumerics, InterpreterChecksFusedGroupsAndLocalises) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto e = scope("block", [&] { return sqrt(x * 2.0f - 3.0f) + x; });  // fused: mul, sub, sqrt, add
  graph g = to_graph(sum(e));
  runtime_feeds feeds;
  feeds["x"] = runtime_tensor(random_rows(32, 4));
  interpreter_options checked;
  checked.check_numerics = true;
  try {
    (void)interpreter(g, checked).run(feeds);
    FAIL() << "expected numerics_error";
  } catch (const numerics_error& err) {
    EXPECT_EQ(err.op(), "sqrt");
    EXPECT_EQ(err.node(), "block/sqrt");
    EXPECT_EQ(err.health().nan, 128u);
  }
  interpreter_options unchecked;
  unchecked.check_numerics = false;
  auto out = interpreter(g, unchecked).run(feeds);
  EXPECT_TRUE(std::isnan(out[0].data<float>()[0]));
}

TEST(CheckNumerics, HealthStatisticsMatchAFloat64Reference) {
  std::vector<double> v{1.5, -2.0, 0.0, std::numeric_limits<double>::infinity(), std::nan(""), 4.0,
                        -std::numeric_limits<double>::infinity()};
  const value_health h = health_of(v.data(), v.size());
  EXPECT_EQ(h.size, 7u);
  EXPECT_EQ(h.nan, 1u);
  EXPECT_EQ(h.positive_infinity, 1u);
  EXPECT_EQ(h.negative_infinity, 1u);
  EXPECT_EQ(h.negative, 1u);
  EXPECT_EQ(h.zero, 1u);
  EXPECT_EQ(h.positive, 2u);
  EXPECT_DOUBLE_EQ(h.min, -2.0);
  EXPECT_DOUBLE_EQ(h.max, 4.0);
  EXPECT_DOUBLE_EQ(h.mean, 3.5 / 4.0);
  const double m = 3.5 / 4.0;
  EXPECT_NEAR(h.std, std::sqrt(((1.5 - m) * (1.5 - m) + (2.0 + m) * (2.0 + m) + m * m + (4.0 - m) * (4.0 - m)) / 4.0), 1e-12);
}

// Traces: intermediates selected by scoped-name patterns come back from fused passes, in evaluation
// order, with health, full health or values, inside gradients too.
#include <symflow/debug/trace_eval.hpp>

TEST(Trace, SelectedIntermediatesOfFusedPassesAndGradientsComeBack) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto W = variable<"W", float, shape<4, 3>>();
  params p;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> n01;
  tensor<float, shape<4, 3>> w;
  for (std::size_t i = 0; i < w.size(); ++i) w.data()[i] = n01(rng);
  p.set("W", w);
  auto h = scope("dense1", [&] { return tanh(matmul(x, W) * 0.5f); });
  auto loss = mean(square(h));
  const auto feed = random_rows(9, 8);
  trace_spec spec;
  spec.add("dense1/*", trace_level::full_health).add("dense1/tanh", trace_level::values).add("grad/*", trace_level::health);
  const traced_run r = trace_eval(spec, loss, grad(loss, W), x = feed, p);

  // The traced tanh values equal a compiled evaluation of the same subexpression.
  const traced_value* t = r.trace.find("dense1/tanh");
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->values.has_value());
  const auto expected = eval(h, x = feed, p);
  ASSERT_EQ(t->values->size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(t->values->data<float>()[i], expected.data()[i]);
  EXPECT_EQ(t->extents, (runtime_extents{9, 3}));

  // Full health of the (fused) scaled product: statistics over a float64 reference.
  const traced_value* m = r.trace.find("dense1/mul");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->level, trace_level::full_health);
  const auto product = eval(matmul(x, W) * 0.5f, x = feed, p);
  double lo = 1e300, hi = -1e300, sum = 0;
  for (std::size_t i = 0; i < product.size(); ++i) {
    lo = std::min(lo, double(product.data()[i]));
    hi = std::max(hi, double(product.data()[i]));
    sum += product.data()[i];
  }
  EXPECT_DOUBLE_EQ(m->health.min, lo);
  EXPECT_DOUBLE_EQ(m->health.max, hi);
  EXPECT_NEAR(m->health.mean, sum / double(product.size()), 1e-6);
  EXPECT_EQ(m->health.negative + m->health.zero + m->health.positive, product.size());

  // Gradient nodes are traced at the health level; untraced nodes are not recorded.
  std::size_t grad_entries = 0;
  for (const auto& e : r.trace.entries) {
    EXPECT_TRUE(e.node.rfind("dense1/", 0) == 0 || e.node.rfind("grad/", 0) == 0) << e.node;
    if (e.node.rfind("grad/", 0) == 0) {
      ++grad_entries;
      EXPECT_EQ(e.level, trace_level::health);
      EXPECT_FALSE(e.values.has_value());
    }
  }
  EXPECT_GT(grad_entries, 2u);
  EXPECT_EQ(r.outputs.size(), 2u);
  EXPECT_NEAR(r.outputs[0].data<float>()[0], eval(loss, x = feed, p)(), 1e-6);

  const std::string json = r.trace.to_json();
  EXPECT_NE(json.find("\"format\":\"symflow.trace\""), std::string::npos);
  EXPECT_NE(json.find("\"node\":\"dense1/tanh\""), std::string::npos);
  EXPECT_NE(r.trace.to_string().find("dense1/tanh (tanh) f32[9,3]"), std::string::npos) << r.trace.to_string();
}

TEST(Trace, GlobPatterns) {
  EXPECT_TRUE(trace_spec::glob_match("dense1/*", "dense1/matmul"));
  EXPECT_TRUE(trace_spec::glob_match("*/matmul", "a/b/matmul"));
  EXPECT_TRUE(trace_spec::glob_match("grad/*/mu?", "grad/x/mul"));
  EXPECT_FALSE(trace_spec::glob_match("dense1/*", "dense2/matmul"));
  EXPECT_FALSE(trace_spec::glob_match("*/add", "a/add/x"));
  EXPECT_TRUE(trace_spec::glob_match("*", ""));
}

// Placement log and profile: each distinct unit of work is logged once, with where it ran and the
// ops (by scoped name) it fused; the profile times every unit and lists the slowest first.
TEST(PlacementAndProfile, FusedPassesAndKernelsAreLoggedOnceAndTimed) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto W = variable<"W", float, shape<4, 3>>();
  params p;
  p.set("W", tensor<float, shape<4, 3>>(extents_t<2>{4, 3}, 0.5f));
  auto h = scope("dense1", [&] { return relu(matmul(x, W) + 1.0f); });
  auto loss = sum(h * h);
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  set_host_placement_log_sink(sink);
  set_host_placement_log(true);
  reset_host_placement_log();
  const auto feed = random_rows(64, 9);
  const traced_run first = profile_eval(loss, x = feed, p);
  const traced_run second = profile_eval(loss, x = feed, p);
  set_host_placement_log(false);
  set_host_placement_log_sink(stderr);
  std::rewind(sink);
  std::string log;
  char buf[512];
  while (std::fgets(buf, sizeof buf, sink)) log += buf;
  std::fclose(sink);

  EXPECT_NE(log.find("symflow placement: cpu ("), std::string::npos) << log;
  EXPECT_NE(log.find("matmul 'dense1/matmul' -> f32[64,3]"), std::string::npos) << log;
  EXPECT_NE(log.find("fused pass [add 'dense1/add', relu 'dense1/relu', mul 'mul']"), std::string::npos) << log;
  std::size_t lines = 0;
  for (char c : log) lines += c == '\n';
  EXPECT_EQ(lines, 3u) << log;  // matmul, the fused pass, the sum — the second run prints nothing new

  ASSERT_EQ(first.profile.entries.size(), 3u);
  EXPECT_GE(first.profile.total_seconds(), 0.0);
  const std::string slowest = second.profile.slowest(2);
  EXPECT_EQ(std::count(slowest.begin(), slowest.end(), '\n'), 2);
  EXPECT_NE(slowest.find(" ms "), std::string::npos) << slowest;
  EXPECT_NEAR(first.outputs[0].data<float>()[0], eval(loss, x = feed, p)(), 1e-3);
}

TEST(PlacementAndProfile, CompiledEvaluationIsLoggedOncePerExpression) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto e = scope("block", [&] { return sum(tanh(x) * 2.0f); });
  std::FILE* sink = std::tmpfile();
  ASSERT_NE(sink, nullptr);
  set_host_placement_log_sink(sink);
  set_host_placement_log(true);
  reset_host_placement_log();
  const auto feed = random_rows(8, 10);
  (void)eval(e, x = feed);
  (void)eval(e, x = feed);
  set_host_placement_log(false);
  set_host_placement_log_sink(stderr);
  std::rewind(sink);
  std::string log;
  char buf[512];
  while (std::fgets(buf, sizeof buf, sink)) log += buf;
  std::fclose(sink);
  EXPECT_NE(log.find("compiled evaluation of [tanh 'block/tanh', mul 'block/mul', sum 'block/sum'] -> f32[]"),
            std::string::npos)
      << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}
