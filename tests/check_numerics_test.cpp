// check_numerics: NaN and infinities found in outputs (fused into the passes), then localised by a
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
    EXPECT_NE(e.location().find("check_numerics_test.cpp:" + std::to_string(line)), std::string::npos) << e.location();
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
