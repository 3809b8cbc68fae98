// Every op and gradient graphs lower losslessly: the graph printed back in to_string's format equals
// to_string of the type it came from, identical nodes appear once, and both serialised forms
// round-trip exactly; together the graphs use every op the loaders know.
#include <cstring>
#include <limits>

#include <symflow/runtime/interpreter.hpp>

#include "graph_support.hpp"

using namespace symflow;
using namespace symflow::testing;

TEST(GraphLowering, GradientsLowerLikeAnyExpression) {
  auto x = placeholder<"x", float, shape<dyn, 5>>();
  auto y = placeholder<"y", std::int32_t, shape<dyn>>();
  auto W1 = variable<"W1", float, shape<5, 8>>();
  auto b1 = variable<"b1", float, shape<8>>();
  auto W2 = variable<"W2", float, shape<8, 3>>();
  auto h = scope("layer1", [&] { return tanh(matmul(x, W1) + b1); });
  auto logits = scope("layer2", [&] { return matmul(h, W2); });
  auto loss = mean(sum(one_hot<3>(y) * -log_softmax(logits), axes<1>));
  auto [dW1, db1, dW2] = grad(loss, W1, b1, W2);
  expect_graph_prints_like(loss, dW1, db1, dW2);
  const graph g = to_graph(grad(loss, W1, b1, W2));
  EXPECT_EQ(g.outputs.size(), 3u);
  EXPECT_EQ(graph_type_string(g.type_of(g.outputs[0])), "f32[5,8]");
  EXPECT_EQ(graph_type_string(g.type_of(g.outputs[1])), "f32[8]");
  EXPECT_EQ(graph_type_string(g.type_of(g.outputs[2])), "f32[8,3]");
  bool grad_scope = false, layer_scope = false;
  for (const auto& n : g.nodes) {
    grad_scope = grad_scope || n.name.starts_with("grad/");
    layer_scope = layer_scope || n.name.starts_with("layer1/");
  }
  EXPECT_TRUE(grad_scope);
  EXPECT_TRUE(layer_scope);
  // The forward graph and the gradients share their common part.
  const graph both = to_graph(loss, dW1, db1, dW2);
  EXPECT_EQ(count_op(both, "tanh"), 1u);
}

TEST(GraphLowering, EveryOpPrintsBackLikeItsType) {
  ops_seen().clear();
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto z = placeholder<"z", float, shape<2, 3, 4>>();
  auto m = placeholder<"m", bool, shape<dyn, 4>>();
  auto w = variable<"w", float, shape<4>>();
  expect_graph_prints_like(abs(x) + cos(x) - sin(x) * exp(x) / sqrt(x), log(x) + log1p(x) + rsqrt(x) + square(x),
                           pow(x, 3.0f) + sigmoid(x) + sign(x) + softplus(x) + tanh(x) + relu(-x),
                           maximum(x, w) + minimum(x, 0.5f), where(m, x, 0.0f));
  expect_graph_prints_like(equal(x, w), not_equal(x, w), x < w, x <= 1.0f, x > w, x >= w, cast<std::int32_t>(x));
  expect_graph_prints_like(sum(z, axes<1>), mean(z, axes<0, 2>, keepdims), max(z), min(z, axes<-1>), softmax(x),
                           logsumexp(z, axes<1>));
  expect_graph_prints_like(slice(x, 0, 1), narrow<1>(z, 1, 3), permute<2, 0, 1>(z), transpose(z), flatten(z),
                           reshape<shape<4, 6>>(z), expand_as(w, x));
  expect_graph_prints_like(argmax<1>(x), argmin<-1>(z, keepdims));
  expect_graph_prints_like(cumsum<1, true>(x), grad(sum(pad<pad_mode::reflect, 1, 0, 2, 1>(x) * 2.0f), x));
  auto loss = sum(square(concat<1>(slice(x, 0, 1), reshape<shape<1, 4>>(w))) * 1.5f) + mean(max(z, axes<2>));
  expect_graph_prints_like(loss, grad(loss, w), grad(loss, x), grad(loss, z));
  auto W = variable<"W", float, shape<4, 3>>();
  expect_graph_prints_like(matmul(x, W), matmul(z, W), grad(sum(tanh(matmul(x, W))), W));
  auto labels = placeholder<"labels", std::int32_t, shape<dyn>>();
  auto xe = mean(sum(one_hot<4>(labels) * -log_softmax(x), axes<1>)) + sum(max(z, axes<2>, keepdims));
  expect_graph_prints_like(xe, grad(xe, x), grad(xe, z));
  expect_graph_prints_like(embedding(W, labels), grad(sum(gather<-1>(z, labels)), z));
  expect_graph_prints_like(grad(sum(flip<-1>(narrow<1>(x, 1, 4, 2))), x), grad(sum(tril(x, -2) * triu(x, 1)), x));
  auto seq = placeholder<"seq", float, shape<dyn, dyn, 4>>();
  expect_graph_prints_like(grad(sum(square(reshape<shape<dyn, 4>>(seq))), seq));
  auto picks = placeholder<"picks", std::int64_t, shape<dyn, 2>>();
  expect_graph_prints_like(grad(sum(gather_elements<1>(x, picks)), x));
  auto img = placeholder<"img", float, shape<dyn, 6, 6, 2>>();
  auto K = variable<"K", float, shape<3, 3, 2, 4>>();
  auto pooled = avg_pool2d<1>(dropout(max_pool2d<2>(conv2d<1, padding::same>(img, K)), 0.5, 3));
  auto cnn = mean(softmax_cross_entropy(reshape<shape<dyn, 36>>(pooled), labels));
  expect_graph_prints_like(cnn, grad(cnn, K), grad(cnn, img));
  expect_graph_prints_like(max_pool2d_indices<3, 2, 1, pool_options::ceil_mode, 2>(img));
  // Together these graphs use every view and kernel a loader knows: all of them round-trip. (Every
  // listed elementwise op and reduction is printed back by the op laws, tests/ops/op_laws.hpp; the
  // control-flow ops, graph nodes without a typed op, by graph_control_flow_test.)
  std::vector<std::string> missing;
  for (const auto& schema : op_schemas())
    if (schema.kind != node_kind::elementwise && schema.kind != node_kind::reduction &&
        !control_flow::is_control_flow(schema.name) &&
        !ops_seen().contains(std::string(schema.name)))
      missing.push_back(std::string(schema.name));
  EXPECT_TRUE(missing.empty()) << "ops never lowered: " << ::testing::PrintToString(missing);
}
