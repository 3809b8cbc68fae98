// A small CNN through the graph value: binary round trip, interpreter and runtime differentiation
// against compiled evaluation, and the CNN adjoint ops differentiated at run time like their types.
#include "cnn_support.hpp"

// --- a small CNN through the graph value ---

namespace {
struct small_cnn {
  placeholder<"x", float, shape<dyn, 8, 8, 1>> x;
  placeholder<"labels", std::int32_t, shape<dyn>> labels;
  variable<"W1", float, shape<3, 3, 1, 4>> W1;
  variable<"b1", float, shape<4>> b1;
  variable<"W2", float, shape<2, 2, 4, 6>> W2;
  variable<"W3", float, shape<24, 10>> W3;
  variable<"b3", float, shape<10>> b3;

  auto loss() const {
    const auto h1 = relu(conv2d<1, padding::same>(x, W1) + b1);           // [N,8,8,4]
    const auto p1 = avg_pool2d<2, 1>(max_pool2d<2>(h1));                    // [N,3,3,4]
    const auto h2 = tanh(conv2d<2, padding::same>(p1, W2));                 // [N,2,2,6]
    const auto flat = dropout(reshape<shape<dyn, 24>>(h2), 0.25, 77);      // [N,24]
    return mean(softmax_cross_entropy(matmul(flat, W3) + b3, labels));
  }
};

double relative_difference(const runtime_tensor& got, const float* want, std::size_t n) {
  EXPECT_EQ(got.size(), n);
  double scale = 0, worst = 0;
  for (std::size_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(double(want[i])));
  for (std::size_t i = 0; i < n && i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got.data<float>()[i]) - double(want[i])));
  return worst / std::max(scale, 1e-30);
}
}  // namespace

TEST(CnnGraph, BinaryRoundTripRunsAndDifferentiatesLikeTheType) {
  const small_cnn m;
  params store;
  store.set("W1", random_tensor<float, shape<3, 3, 1, 4>>({3, 3, 1, 4}, -0.5, 0.5, 500));
  store.set("b1", random_tensor<float, shape<4>>({4}, -0.1, 0.1, 501));
  store.set("W2", random_tensor<float, shape<2, 2, 4, 6>>({2, 2, 4, 6}, -0.5, 0.5, 502));
  store.set("W3", random_tensor<float, shape<24, 10>>({24, 10}, -0.5, 0.5, 503));
  store.set("b3", random_tensor<float, shape<10>>({10}, -0.1, 0.1, 504));
  const auto xv = random_tensor<float, shape<dyn, 8, 8, 1>>({5, 8, 8, 1}, 0, 1, 505);
  const tensor<std::int32_t, shape<dyn>> yv{3, 9, 0, 4, 4};

  const auto loss = m.loss();
  const auto [dW1, db1, dW2, dW3, db3] = grad(loss, m.W1, m.b1, m.W2, m.W3, m.b3);
  const auto compiled = eval(loss, dW1, db1, dW2, dW3, db3, m.x = xv, m.labels = yv, store);
  const std::vector<const float*> want{std::get<0>(compiled).data(), std::get<1>(compiled).data(),
                                       std::get<2>(compiled).data(), std::get<3>(compiled).data(),
                                       std::get<4>(compiled).data(), std::get<5>(compiled).data()};
  const std::vector<std::size_t> sizes{1, 36, 4, 96, 240, 10};
  const runtime_feeds feeds{{"x", runtime_tensor(xv)}, {"labels", runtime_tensor(yv)}};
  auto expect_matches = [&](const std::vector<runtime_tensor>& got, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_LT(relative_difference(got[k], want[k], sizes[k]), 1e-5) << what << ", output " << k;
  };

  // The compile-time gradients lowered with the model: every backward kernel runs in the interpreter.
  expect_matches(interpreter(to_graph(loss, dW1, db1, dW2, dW3, db3)).run(feeds, &store), "lowered gradients");

  graph saved = to_graph(loss);
  embed_parameters(saved, store);
  const graph loaded = load_graph_binary(save_graph_binary(saved, {.embed_parameters = true}));
  EXPECT_EQ(loaded, saved);
  const auto run = interpreter(loaded).run(feeds);
  ASSERT_EQ(run.size(), 1u);
  EXPECT_LT(relative_difference(run[0], want[0], 1), 1e-6);
  expect_matches(interpreter(differentiate(loaded, {"W1", "b1", "W2", "W3", "b3"})).run(feeds), "differentiated at run time");
}

// Second order at run time: the adjoint ops' runtime rules against their compile-time rules.
TEST(CnnGraph, AdjointOpsDifferentiateAtRunTimeLikeTheirTypes) {
  const auto g = placeholder<"g", float, shape<2, 3, 2, 2>>();
  const auto w = variable<"w", float, shape<3, 3, 3, 2>>();
  const auto x = placeholder<"x", float, shape<2, 5, 4, 3>>();
  const auto gp = placeholder<"gp", float, shape<2, 2, 2, 3>>();
  const auto logits = placeholder<"logits", float, shape<4, 5>>();
  const auto labels = placeholder<"labels", std::int32_t, shape<4>>();
  const auto gl = placeholder<"gl", float, shape<4>>();
  const auto loss = sum(sin(conv2d_backprop_input<2, padding::same>(g, w, x))) +
                    sum(sin(conv2d_backprop_filter<2, padding::same>(x, g, w))) +
                    sum(sin(avg_pool2d_backward<2>(gp, x))) + sum(sin(softmax_cross_entropy_backward(gl, logits, labels)));
  const auto [dg, dw, dx, dgp, dl, dgl] = grad(loss, g, w, x, gp, logits, gl);

  const auto gv = random_tensor<float, shape<2, 3, 2, 2>>({2, 3, 2, 2}, -1, 1, 600);
  const auto wv = random_tensor<float, shape<3, 3, 3, 2>>({3, 3, 3, 2}, -1, 1, 601);
  const auto xv = random_tensor<float, shape<2, 5, 4, 3>>({2, 5, 4, 3}, -1, 1, 602);
  const auto gpv = random_tensor<float, shape<2, 2, 2, 3>>({2, 2, 2, 3}, -1, 1, 603);
  const auto lv = random_tensor<float, shape<4, 5>>({4, 5}, -2, 2, 604);
  const tensor<std::int32_t, shape<4>> yv{1, -1, 4, 0};
  const auto glv = random_tensor<float, shape<4>>({4}, -1, 1, 605);
  params store;
  store.set("w", wv);
  const auto compiled = eval(loss, dg, dw, dx, dgp, dl, dgl, g = gv, x = xv, gp = gpv, logits = lv, labels = yv,
                             gl = glv, store);
  const runtime_feeds feeds{{"g", runtime_tensor(gv)},   {"x", runtime_tensor(xv)},      {"gp", runtime_tensor(gpv)},
                            {"logits", runtime_tensor(lv)}, {"labels", runtime_tensor(yv)}, {"gl", runtime_tensor(glv)}};
  const auto got = interpreter(differentiate(to_graph(loss), {"g", "w", "x", "gp", "logits", "gl"})).run(feeds, &store);
  ASSERT_EQ(got.size(), 7u);
  std::size_t k = 0;
  auto expect_matches = [&](const auto& want) {
    EXPECT_LT(relative_difference(got[k], want.data(), want.size()), 1e-5) << "output " << k;
    ++k;
  };
  std::apply([&](const auto&... want) { (expect_matches(want), ...); }, compiled);
}

// A dilated grouped convolution (the dilation and groups attributes) through the graph value: the
// interpreter and run-time differentiation give what the type gives; a file without the two
// attributes (written before they existed) still loads and means dilation 1, one group.
TEST(CnnGraph, DilationAndGroupsTravelThroughTheGraph) {
  const auto x = placeholder<"x", float, shape<dyn, 9, 8, 6>>();
  const auto w = variable<"w", float, shape<3, 2, 2, 9>>();
  const auto loss = sum(sin(conv2d<2, padding::same, 2, 3>(x, w)));
  const auto dw = grad(loss, w);
  const auto xv = random_tensor<float, shape<dyn, 9, 8, 6>>({3, 9, 8, 6}, -1, 1, 620);
  const auto wv = random_tensor<float, shape<3, 2, 2, 9>>({3, 2, 2, 9}, -1, 1, 621);
  params store;
  store.set("w", wv);
  const auto compiled = eval(loss, dw, x = xv, store);
  const runtime_feeds feeds{{"x", runtime_tensor(xv)}};

  const graph saved = to_graph(loss);
  const graph loaded = load_graph_binary(save_graph_binary(saved));
  EXPECT_EQ(loaded, saved);
  const auto got = interpreter(differentiate(loaded, {"w"})).run(feeds, &store);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_LT(relative_difference(got[0], std::get<0>(compiled).data(), 1), 1e-5);
  EXPECT_LT(relative_difference(got[1], std::get<1>(compiled).data(), wv.size()), 1e-5);

  // Without the attributes: conv2d<2, same> of the same x by an ungrouped filter.
  graph old = to_graph(sum(sin(conv2d<2, padding::same>(x, variable<"v", float, shape<3, 2, 6, 4>>()))));
  std::size_t stripped = 0;
  for (graph_node& n : old.nodes)
    stripped += std::erase_if(n.attributes, [](const graph_attribute& a) { return a.key == "dilation" || a.key == "groups"; });
  EXPECT_EQ(stripped, 2u);
  const auto vv = random_tensor<float, shape<3, 2, 6, 4>>({3, 2, 6, 4}, -1, 1, 622);
  store.set("v", vv);
  const auto want = eval(sum(sin(conv2d<2, padding::same>(x, variable<"v", float, shape<3, 2, 6, 4>>()))), x = xv, store);
  const auto ran = interpreter(load_graph_binary(save_graph_binary(old))).run(feeds, &store);
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_LT(relative_difference(ran[0], want.data(), 1), 1e-6);
}
