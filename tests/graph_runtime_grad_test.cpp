// Graphs built at run time and differentiated at run time: the derivative rules are the ops' own
// (compile-time rules instantiated on placeholders, or their runtime forms); checked against the
// compile-time gradient of the same model and against central finite differences in float64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <symflow/graph/all.hpp>
#include <symflow/graph/json.hpp>
#include <symflow/graph/runtime/builder.hpp>
#include <symflow/graph/runtime/grad.hpp>
#include <symflow/graph/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

template <class T, class S>
tensor<T, S> random_tensor(const extents_t<S::rank>& e, std::uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  extents_t<S::rank> extents = e;
  if constexpr (S::is_static) extents = S::extents;
  tensor<T, S> t(extents, uninitialized);
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = T(u(rng));
  return t;
}

template <class T>
double max_abs_diff(const runtime_tensor& a, const T* b, std::size_t n) {
  EXPECT_EQ(a.size(), n);
  double m = 0;
  for (std::size_t i = 0; i < n && i < a.size(); ++i)
    m = std::max(m, std::abs(double(a.data<typename std::remove_const_t<T>>()[i]) - double(b[i])));
  return m;
}

// The runtime gradient of to_graph(loss) w.r.t. the named leaves equals grad(loss, leaves...).
template <class Loss, class... Leaf, class... Feeds>
void expect_runtime_grad_matches(const Loss& loss, std::tuple<Leaf...> leaves, const runtime_feeds& rf,
                                 const params& p, double tol, const Feeds&... feeds) {
  std::vector<std::string> names{std::string(Leaf::name.view())...};
  graph dg = differentiate(to_graph(loss), names);
  ASSERT_NO_THROW(validate(dg));
  auto out = interpreter(dg).run(rf, &p);
  ASSERT_EQ(out.size(), 1 + sizeof...(Leaf));
  std::size_t k = 1;
  std::apply(
      [&](const auto&... leaf) {
        (
            [&] {
              auto expected = eval(grad(loss, leaf), feeds..., p);
              EXPECT_LE(max_abs_diff(out[k], expected.data(), expected.size()), tol) << "gradient " << k << " of " << to_string(loss);
              ++k;
            }(),
            ...);
      },
      leaves);
}

}  // namespace

TEST(RuntimeGrad, MlpWithSoftmaxCrossEntropyMatchesCompileTimeGradient) {
  auto x = placeholder<"x", double, shape<dyn, 6>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W1 = variable<"W1", double, shape<6, 5>>();
  auto b1 = variable<"b1", double, shape<5>>();
  auto W2 = variable<"W2", double, shape<5, 3>>();
  auto h = scope("dense1", [&] { return relu(matmul(x, W1) + b1); });
  auto logits = matmul(h, W2);
  auto loss = -mean(sum(log_softmax(logits) * one_hot<3, double>(y), axes<1>)) + 0.01 * sum(square(W1));
  auto tx = random_tensor<double, shape<dyn, 6>>({7, 6}, 1);
  tensor<std::int32_t, shape<dyn>> ty(extents_t<1>{7}, 0);
  for (std::size_t i = 0; i < 7; ++i) ty[i] = std::int32_t((i * 5) % 3);
  params p;
  p.set("W1", random_tensor<double, shape<6, 5>>({}, 2));
  p.set("b1", random_tensor<double, shape<5>>({}, 3));
  p.set("W2", random_tensor<double, shape<5, 3>>({}, 4));
  runtime_feeds rf;
  rf["x"] = runtime_tensor(tx);
  rf["y"] = runtime_tensor(ty);
  expect_runtime_grad_matches(loss, std::tuple{W1, b1, W2}, rf, p, 1e-12, x = tx, y = ty);
}

TEST(RuntimeGrad, ElementwiseRulesAndBroadcastingMatchCompileTimeGradient) {
  auto a = placeholder<"a", double, shape<4, 3>>();
  auto b = placeholder<"b", double, shape<3>>();
  auto c = placeholder<"c", double, shape<4, 1>>();
  auto ta = random_tensor<double, shape<4, 3>>({}, 5, 0.2, 1.5);
  auto tb = random_tensor<double, shape<3>>({}, 6, 0.2, 1.5);
  auto tc = random_tensor<double, shape<4, 1>>({}, 7, -1, 1);
  runtime_feeds rf;
  rf["a"] = runtime_tensor(ta);
  rf["b"] = runtime_tensor(tb);
  rf["c"] = runtime_tensor(tc);
  const params none;
  auto loss = sum(exp(a) * b + log(a) / b - sin(c) * cos(a) + tanh(a * c) + sigmoid(b - c) + sqrt(a) * rsqrt(b) +
                  square(c) * abs(a - 0.7) + softplus(c) * log1p(a) + pow(a, b) + maximum(a, c) - minimum(b, c) +
                  where(a > b, a * c, -b) + relu(c - 0.1) * a);
  expect_runtime_grad_matches(loss, std::tuple{a, b, c}, rf, none, 1e-12, a = ta, b = tb, c = tc);
}

TEST(RuntimeGrad, ReductionsViewsAndKernelsMatchCompileTimeGradient) {
  auto x = placeholder<"x", double, shape<2, 3, 4>>();
  auto w = placeholder<"w", double, shape<4, 5>>();
  auto v = placeholder<"v", double, shape<2, 5, 3>>();
  auto tx = random_tensor<double, shape<2, 3, 4>>({}, 8);
  auto tw = random_tensor<double, shape<4, 5>>({}, 9);
  auto tv = random_tensor<double, shape<2, 5, 3>>({}, 10);
  runtime_feeds rf;
  rf["x"] = runtime_tensor(tx);
  rf["w"] = runtime_tensor(tw);
  rf["v"] = runtime_tensor(tv);
  const params none;
  auto xw = matmul(x, w);                // [2,3,5]: batched by plain
  auto xwv = matmul(xw, v);              // [2,3,3]: batched by batched
  auto t = permute<2, 0, 1>(xwv);        // [3,2,3]
  auto r = reshape<shape<6, 3>>(t);      // [6,3]
  auto s = slice(r, 1, 5);               // [4,3]
  auto cat = concat<1>(s, s * 2.0);      // [4,6]
  auto loss = mean(square(cat)) + sum(max(xw, axes<2>) * mean(x, axes<2>)) + sum(logsumexp(x)) +
              sum(mean(sum(x, axes<1>, keepdims) * x, axes<0, 2>));
  expect_runtime_grad_matches(loss, std::tuple{x, w, v}, rf, none, 1e-10, x = tx, w = tw, v = tv);
}

TEST(RuntimeGrad, LoadedGraphDifferentiatesWithUnknownBatchExtent) {
  auto x = placeholder<"x", float, shape<dyn, 8>>();
  auto W = variable<"W", float, shape<8, 2>>();
  auto loss = mean(tanh(matmul(x, W)));
  graph g = load_graph_binary(save_graph_binary(to_graph(loss)));
  graph dg = differentiate(g, {"W"});
  EXPECT_EQ(dg.nodes.back().type.shape, (std::vector<std::int64_t>{8, 2}));
  for (std::size_t batch : {1u, 5u}) {
    auto tx = random_tensor<float, shape<dyn, 8>>({batch, 8}, 11 + batch);
    params p;
    p.set("W", random_tensor<float, shape<8, 2>>({}, 12));
    runtime_feeds rf;
    rf["x"] = runtime_tensor(tx);
    auto out = interpreter(dg).run(rf, &p);
    auto expected = eval(grad(loss, W), x = tx, p);
    EXPECT_LE(max_abs_diff(out[1], expected.data(), expected.size()), 1e-6);
  }
}

namespace {
// A recurrent cell unrolled over one sequence's own length, built at run time:
// h_t = tanh(x_t Wx + h_{t-1} Wh + b), loss = mean over steps of sum(h_t * h_t) / 2.
graph recurrent_model(std::size_t length, std::size_t in, std::size_t hidden) {
  using namespace graph_ops;
  graph_builder b;
  const std::int64_t I = std::int64_t(in), H = std::int64_t(hidden), T = std::int64_t(length);
  auto xs = b.input("xs", dtype::f64, {T, I});
  auto Wx = b.parameter("Wx", dtype::f64, {I, H});
  auto Wh = b.parameter("Wh", dtype::f64, {H, H});
  auto bias = b.parameter("b", dtype::f64, {H});
  auto h0 = b.input("h0", dtype::f64, {1, H});
  graph_handle h = h0;
  std::optional<graph_handle> total;
  for (std::int64_t t = 0; t < T; ++t) {
    auto s = b.scope("step" + std::to_string(t));
    auto xt = slice(xs, 0, t, t + 1);
    h = tanh(matmul(xt, Wx) + matmul(h, Wh) + bias);
    auto e = sum(h * h) * 0.5;
    total = total ? *total + e : e;
  }
  return b.build({*total / double(T)});
}
}  // namespace

TEST(RuntimeGrad, VariableLengthRecurrentCellMatchesFiniteDifferences) {
  const std::size_t in = 3, hidden = 4;
  params p;
  p.set("Wx", random_tensor<double, shape<3, 4>>({}, 20));
  p.set("Wh", random_tensor<double, shape<4, 4>>({}, 21));
  p.set("b", random_tensor<double, shape<4>>({}, 22));
  for (std::size_t length : {1u, 3u, 6u}) {
    graph g = recurrent_model(length, in, hidden);
    EXPECT_EQ(scope_of_name(g.nodes.back().name), "");
    graph dg = differentiate(g, {"Wx", "Wh", "b", "xs"});
    runtime_feeds rf;
    rf["xs"] = runtime_tensor(random_tensor<double, shape<dyn, 3>>({length, in}, 30 + length));
    rf["h0"] = runtime_tensor(random_tensor<double, shape<1, 4>>({}, 40 + length));
    const interpreter run_loss(g), run_grad(dg);
    const auto analytic = run_grad.run(rf, &p);
    auto loss_at = [&](params& q, runtime_feeds& f) { return run_loss.run(f, &q)[0].data<double>()[0]; };
    EXPECT_DOUBLE_EQ(analytic[0].data<double>()[0], loss_at(p, rf));
    const double h = 1e-6;
    const std::vector<std::string> names{"Wx", "Wh", "b"};
    for (std::size_t k = 0; k < names.size(); ++k) {
      auto& entry = p.at(names[k]);
      double* w = reinterpret_cast<double*>(entry.bytes.data());
      const std::size_t n = entry.bytes.size() / sizeof(double);
      for (std::size_t i = 0; i < n; ++i) {
        const double saved = w[i];
        w[i] = saved + h;
        const double up = loss_at(p, rf);
        w[i] = saved - h;
        const double down = loss_at(p, rf);
        w[i] = saved;
        EXPECT_NEAR(analytic[1 + k].data<double>()[i], (up - down) / (2 * h), 1e-7)
            << names[k] << "[" << i << "], length " << length;
      }
    }
    // And with respect to the input sequence itself.
    double* xs = rf["xs"].data<double>();
    for (std::size_t i = 0; i < length * in; ++i) {
      const double saved = xs[i];
      xs[i] = saved + h;
      const double up = loss_at(p, rf);
      xs[i] = saved - h;
      const double down = loss_at(p, rf);
      xs[i] = saved;
      EXPECT_NEAR(analytic[4].data<double>()[i], (up - down) / (2 * h), 1e-7) << "xs[" << i << "]";
    }
  }
}

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
