// Graphs differentiated at run time (the derivative rules are the ops' own: compile-time rules
// instantiated on placeholders, or their runtime forms): an MLP with softmax cross-entropy against
// its compile-time gradient, and a loaded graph with an unknown batch extent.
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
