// Graphs differentiated at run time (the derivative rules are the ops' own: compile-time rules
// instantiated on placeholders, or their runtime forms): an MLP with softmax cross-entropy against
// its compile-time gradient, and a loaded graph with an unknown batch extent.
#include "runtime_grad_support.hpp"

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

// A rule yields adjoints for all its operands (matmul's for x too) and a reduction's rule gets its
// value with the axes restored; what no output reads is not in the gradient graph.
TEST(RuntimeGrad, GradientGraphHoldsOnlyWhatItsOutputsRead) {
  auto x = placeholder<"x", double, shape<dyn, 3>>();
  auto W = variable<"W", double, shape<3, 2>>();
  auto loss = mean(tanh(matmul(x, W)));
  const graph dg = differentiate(to_graph(loss), {"W"});
  std::vector<bool> read(dg.value_count(), false);
  for (const auto& n : dg.nodes)
    for (auto i : n.inputs) read[i] = true;
  for (auto o : dg.outputs) read[o] = true;
  std::size_t matmuls = 0;
  for (std::size_t k = 0; k < dg.nodes.size(); ++k) {
    EXPECT_TRUE(read[dg.first_node_id() + k]) << dg.describe_value(std::uint32_t(dg.first_node_id() + k)) << " feeds nothing";
    matmuls += dg.nodes[k].op == "matmul";
  }
  EXPECT_EQ(matmuls, 2u);  // the forward one and dW's; x's adjoint is not asked for
  EXPECT_EQ(dg.inputs.size(), 1u);
  EXPECT_EQ(dg.parameters.size(), 1u);
  auto tx = random_tensor<double, shape<dyn, 3>>({5, 3}, 21);
  params p;
  p.set("W", random_tensor<double, shape<3, 2>>({}, 22));
  runtime_feeds rf;
  rf["x"] = runtime_tensor(tx);
  auto out = interpreter(dg).run(rf, &p);
  auto expected = eval(grad(loss, W), x = tx, p);
  EXPECT_LE(max_abs_diff(out[1], expected.data(), expected.size()), 1e-12);
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
