// Graphs built and differentiated at run time: the builder's shape errors, the gradient of a
// gradient graph, run_into reusing the caller's storage, and a loaded gradient graph differentiated
// again against float64 central differences.
#include <limits>

#include "runtime_grad_support.hpp"

TEST(RuntimeGrad, BuilderNamesTheOpAndShapesOnMismatch) {
  using namespace graph_ops;
  graph_builder b;
  auto x = b.input("x", dtype::f32, {2, 3});
  auto W = b.parameter("W", dtype::f32, {4, 5});
  try {
    auto s = b.scope("dense");
    (void)matmul(x, W);
    FAIL() << "expected a shape_error";
  } catch (const shape_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("matmul 'dense/matmul'"), std::string::npos) << what;
    EXPECT_NE(what.find("f32[2,3]"), std::string::npos) << what;
    EXPECT_NE(what.find("f32[4,5]"), std::string::npos) << what;
  }
  EXPECT_THROW((void)(x + b.input("y", dtype::f64, {2, 3})), value_error);
  EXPECT_THROW(differentiate(b.build({sum(x)}), {"nope"}), graph_error);
}

// An integer literal is a number an int64 holds: NaN, the infinities and 2^63 are refused (their
// conversion would be undefined), the int64 extremes that a double holds are kept exactly.
TEST(RuntimeGrad, BuilderRefusesIntegerLiteralsNoInt64Holds) {
  graph_builder b;
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (const double v : {std::nan(""), inf, -inf, 0x1p63, -0x1p64})
    for (const dtype t : {dtype::i32, dtype::i64}) EXPECT_THROW((void)b.literal(v, t), value_error) << v;
  const graph_handle low = b.literal(-0x1p63, dtype::i64), high = b.literal(0x1p62, dtype::i64);
  const auto out = run_graph(b.build({low, high}), {});
  EXPECT_EQ(out[0].data<std::int64_t>()[0], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(out[1].data<std::int64_t>()[0], std::int64_t(1) << 62);
  EXPECT_NO_THROW((void)b.literal(std::nan(""), dtype::f32));
}

TEST(RuntimeGrad, GradientOfAGradientGraphIsAGraphToo) {
  // d/dx of sum(d/dx sum(x^3)) = d/dx sum(3x^2) = 6x.
  using namespace graph_ops;
  graph_builder b;
  auto x = b.input("x", dtype::f64, {5});
  graph first = differentiate(b.build({sum(x * x * x)}), {"x"});
  graph_builder b2(first);
  auto dx = b2.handle(first.outputs[1]);
  graph second = differentiate(b2.build({sum(dx)}), {"x"});
  auto tx = random_tensor<double, shape<5>>({}, 50);
  runtime_feeds rf;
  rf["x"] = runtime_tensor(tx);
  auto out = interpreter(second).run(rf);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_NEAR(out[1].data<double>()[i], 6 * tx[i], 1e-12);
}

TEST(Interpreter, RunIntoReusesTheCallersOutputStorage) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto e = tanh(x * 2.0f) + x;
  const interpreter run(to_graph(e, sum(e), e));
  runtime_feeds rf;
  rf["x"] = runtime_tensor(random_tensor<float, shape<dyn, 4>>({300, 4}, 60));
  std::vector<runtime_tensor> outs;
  run.run_into(outs, rf);
  ASSERT_EQ(outs.size(), 3u);
  const void* first = outs[0].bytes();
  const void* second = outs[1].bytes();
  rf["x"] = runtime_tensor(random_tensor<float, shape<dyn, 4>>({300, 4}, 61));
  run.run_into(outs, rf);
  EXPECT_EQ(outs[0].bytes(), first);
  EXPECT_EQ(outs[1].bytes(), second);
  const auto fresh = run.run(rf);
  for (std::size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(outs[k].byte_size(), fresh[k].byte_size());
    EXPECT_EQ(std::memcmp(outs[k].bytes(), fresh[k].bytes(), fresh[k].byte_size()), 0) << k;
  }
  EXPECT_NE(outs[2].bytes(), outs[0].bytes());  // a repeated output is its own copy
}

// The fuzz corpus' gradient graph (an MLP with a log-softmax loss, gradients included), differentiated
// again at run time. differentiate() used to keep a reference to a node's shape while adding nodes
// (a use-after-free under ASan; wrong or varying gradient graphs without it): the new graph's
// gradients must have their leaves' shapes and match central finite differences.
TEST(RuntimeGrad, LoadedGradientGraphDifferentiatesToFiniteDifferences) {
  const graph g = load_graph_json_file(SYMFLOW_TEST_DATA_DIR "/fuzz/json/gradients.json");
  const graph dg = differentiate(g, {"x", "W", "b"});
  ASSERT_NO_THROW(validate(dg));
  EXPECT_EQ(save_graph_json(dg), save_graph_json(differentiate(g, {"x", "W", "b"})));  // deterministic

  const std::size_t batch = 5;
  params p;
  p.set("W", random_tensor<float, shape<3, 2>>({}, 50));
  p.set("b", random_tensor<float, shape<2>>({}, 51));
  runtime_feeds rf;
  rf["x"] = runtime_tensor(random_tensor<float, shape<dyn, 3>>({batch, 3}, 52));
  runtime_tensor labels(dtype::i32, {batch});
  for (std::size_t i = 0; i < batch; ++i) labels.data<std::int32_t>()[i] = std::int32_t(i % 2);
  rf["y"] = labels;

  const auto out = interpreter(dg).run(rf, &p);
  ASSERT_EQ(out.size(), g.outputs.size() + 3);
  const std::size_t first = g.outputs.size();
  EXPECT_EQ(out[first].extents(), (runtime_extents{batch, 3}));
  EXPECT_EQ(out[first + 1].extents(), (runtime_extents{3, 2}));
  EXPECT_EQ(out[first + 2].extents(), (runtime_extents{2}));

  const interpreter run_loss(g);
  auto loss_at = [&] { return double(run_loss.run(rf, &p)[0].data<float>()[0]); };
  const double h = 1e-2;
  auto check = [&](float* w, std::size_t n, const runtime_tensor& analytic, const char* what) {
    for (std::size_t i = 0; i < n; ++i) {
      const float saved = w[i];
      w[i] = saved + float(h);
      const double up = loss_at();
      w[i] = saved - float(h);
      const double down = loss_at();
      w[i] = saved;
      EXPECT_NEAR(analytic.data<float>()[i], (up - down) / (2 * h), 2e-3) << what << "[" << i << "]";
    }
  };
  check(rf["x"].data<float>(), batch * 3, out[first], "x");
  check(reinterpret_cast<float*>(p.at("W").bytes.data()), 6, out[first + 1], "W");
  check(reinterpret_cast<float*>(p.at("b").bytes.data()), 2, out[first + 2], "b");
}
