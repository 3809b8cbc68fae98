// to_graph: lowering expression types to the graph value; the exact JSON text of a small graph;
// attributes read from the ops' own files; literals; sharing of identical subexpressions; DOT and
// inspect output. (Every op and gradients: graph_ops_test.cpp.)
#include <cstdlib>
#include <fstream>

#include "graph_support.hpp"

using namespace symflow;
using namespace symflow::testing;

TEST(GraphLowering, ExactJsonOfADenseLayer) {
  const int lx = __LINE__; auto x = placeholder<"x", float, shape<dyn, 3>>();
  const int lw = __LINE__; auto W = variable<"W", float, shape<3, 2>>();
  const int lb = __LINE__; auto b = variable<"b", float, shape<2>>();
  const int ly = __LINE__; auto y = scope("dense", [&] { return relu(matmul(x, W) + b); });
  const int ls = __LINE__; auto loss = mean(y * 2.0f, axes<1>, keepdims);
  const graph g = to_graph(loss);
  std::string expected = R"({
  "format": "symflow.graph",
  "version": 1,
  "inputs": [
    {"id":0,"name":"x","scope":"","dtype":"f32","shape":[-1,3],"file":"FILE","line":LX}
  ],
  "parameters": [
    {"id":1,"name":"W","scope":"","dtype":"f32","shape":[3,2],"file":"FILE","line":LW},
    {"id":2,"name":"b","scope":"","dtype":"f32","shape":[2],"file":"FILE","line":LB}
  ],
  "constants": [],
  "nodes": [
    {"id":3,"op":"matmul","name":"dense/matmul","inputs":[0,1],"attrs":{},"dtype":"f32","shape":[-1,2],"file":"FILE","line":LY},
    {"id":4,"op":"add","name":"dense/add","inputs":[3,2],"attrs":{},"dtype":"f32","shape":[-1,2],"file":"FILE","line":LY},
    {"id":5,"op":"relu","name":"dense/relu","inputs":[4],"attrs":{},"dtype":"f32","shape":[-1,2],"file":"FILE","line":LY},
    {"id":6,"op":"literal","name":"literal","inputs":[],"attrs":{"value":2.0,"static":false},"dtype":"f32","shape":[],"file":"","line":0},
    {"id":7,"op":"mul","name":"mul","inputs":[5,6],"attrs":{},"dtype":"f32","shape":[-1,2],"file":"","line":0},
    {"id":8,"op":"mean","name":"mean","inputs":[7],"attrs":{"axes":[1],"keepdims":true},"dtype":"f32","shape":[-1,1],"file":"FILE","line":LS}
  ],
  "outputs": [8]
}
)";
  expected = replace_all(expected, "FILE", __FILE__);
  expected = replace_all(expected, "LX", std::to_string(lx));
  expected = replace_all(expected, "LW", std::to_string(lw));
  expected = replace_all(expected, "LB", std::to_string(lb));
  expected = replace_all(expected, "LY", std::to_string(ly));
  expected = replace_all(expected, "LS", std::to_string(ls));
  EXPECT_EQ(save_graph_json(g), expected);
  EXPECT_EQ(save_graph_json(load_graph_json(expected)), expected);
}

TEST(GraphLowering, AttributesComeFromTheOps) {
  auto x = placeholder<"x", float, shape<dyn, 4, 6>>();
  auto labels = placeholder<"labels", std::int32_t, shape<dyn>>();
  auto v = variable<"v", float, shape<4, 6>>();
  auto a = slice(x, 1, 3);                              // slice axis 0
  auto n = narrow<2>(x, 2, 5);                          // slice axis 2
  auto p = permute<2, 0, 1>(x);                         // transpose perm
  auto t = transpose(v);
  auto r = reshape<shape<dyn, 24>>(x);
  auto c = cast<double>(x);
  auto h = one_hot<5, double>(labels);
  auto k = concat<1>(x, x);
  auto s = sum(x, axes<0, -1>, keepdims);
  auto e = expand_dims<0b101u>(v);
  auto cnt = reduced_count<0b110u, float>(x);
  auto sc = scatter<1>(narrow<1>(x, 1, 3), x, 1, 3);
  const graph g = to_graph(a, n, p, t, r, c, h, k, s, e, cnt, sc);

  auto attr = [&](const graph_node& node, const char* key) { return *node.attribute(key); };
  const auto& s0 = node_named(g, "slice", 0);
  EXPECT_EQ(attr(s0, "axis"), attribute_value(std::int64_t(0)));
  EXPECT_EQ(attr(s0, "begin"), attribute_value(std::int64_t(1)));
  EXPECT_EQ(attr(s0, "end"), attribute_value(std::int64_t(3)));
  EXPECT_EQ(graph_type_string(s0.type), "f32[?,4,6]");
  const auto& s1 = node_named(g, "slice", 1);
  EXPECT_EQ(attr(s1, "axis"), attribute_value(std::int64_t(2)));
  EXPECT_EQ(attr(s1, "begin"), attribute_value(std::int64_t(2)));
  EXPECT_EQ(attr(s1, "end"), attribute_value(std::int64_t(5)));
  EXPECT_EQ(attr(node_named(g, "transpose", 0), "perm"), attribute_value(ints({2, 0, 1})));
  EXPECT_EQ(attr(node_named(g, "transpose", 1), "perm"), attribute_value(ints({1, 0})));
  EXPECT_EQ(attr(node_named(g, "reshape"), "shape"), attribute_value(ints({-1, 24})));
  EXPECT_EQ(attr(node_named(g, "cast"), "to"), attribute_value(std::string("f64")));
  EXPECT_EQ(node_named(g, "cast").type.type, dtype::f64);
  EXPECT_EQ(attr(node_named(g, "one_hot"), "depth"), attribute_value(std::int64_t(5)));
  EXPECT_EQ(attr(node_named(g, "one_hot"), "to"), attribute_value(std::string("f64")));
  EXPECT_EQ(graph_type_string(node_named(g, "one_hot").type), "f64[?,5]");
  EXPECT_EQ(attr(node_named(g, "concat"), "axis"), attribute_value(std::int64_t(1)));
  EXPECT_EQ(graph_type_string(node_named(g, "concat").type), "f32[?,8,6]");
  EXPECT_EQ(node_named(g, "concat").inputs[0], node_named(g, "concat").inputs[1]);  // x once
  EXPECT_EQ(attr(node_named(g, "sum"), "axes"), attribute_value(ints({0, 2})));
  EXPECT_EQ(attr(node_named(g, "sum"), "keepdims"), attribute_value(true));
  EXPECT_EQ(graph_type_string(node_named(g, "sum").type), "f32[1,4,1]");
  EXPECT_EQ(attr(node_named(g, "expand_dims"), "axes"), attribute_value(ints({0, 2})));
  EXPECT_EQ(graph_type_string(node_named(g, "expand_dims").type), "f32[1,4,1,6]");
  EXPECT_EQ(attr(node_named(g, "reduced_count"), "axes"), attribute_value(ints({1, 2})));
  EXPECT_EQ(attr(node_named(g, "reduced_count"), "to"), attribute_value(std::string("f32")));
  const auto& scat = node_named(g, "scatter");
  EXPECT_EQ(attr(scat, "axis"), attribute_value(std::int64_t(1)));
  EXPECT_EQ(attr(scat, "begin"), attribute_value(std::int64_t(1)));
  EXPECT_EQ(attr(scat, "end"), attribute_value(std::int64_t(3)));
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.inputs[1].name, "labels");
  EXPECT_EQ(g.inputs[1].type.type, dtype::i32);
  EXPECT_EQ(g.outputs.size(), 12u);
  // Every op the graph names is one a loader accepts, with the attributes its schema lists.
  validate(g);
}

TEST(GraphLowering, LiteralsKeepTheirValueAndWhetherTheTypeHoldsIt) {
  auto x = placeholder<"x", double, shape<3>>();
  auto i = placeholder<"i", std::int64_t, shape<3>>();
  auto m = placeholder<"m", bool, shape<3>>();
  auto e = where(m, x * 0.1 + one<double>{}, -2.5);
  auto j = i * std::int64_t(-9007199254740993);  // not representable as a double
  const graph g = to_graph(e, j, where(m, m, true));
  std::vector<attribute_value> values;
  std::vector<bool> statics;
  for (const auto& n : g.nodes)
    if (n.is_literal()) {
      values.push_back(*n.attribute("value"));
      statics.push_back(std::get<bool>(*n.attribute("static")));
    }
  ASSERT_EQ(values.size(), 5u);
  EXPECT_EQ(values[0], attribute_value(0.1));
  EXPECT_EQ(values[1], attribute_value(1.0));
  EXPECT_TRUE(statics[1]);  // one<double>: part of the type
  EXPECT_FALSE(statics[0]);
  EXPECT_EQ(values[2], attribute_value(-2.5));
  EXPECT_EQ(values[3], attribute_value(std::int64_t(-9007199254740993)));
  EXPECT_EQ(values[4], attribute_value(true));
  const std::string json = save_graph_json(g);
  EXPECT_NE(json.find("\"value\":-9007199254740993"), std::string::npos);
  EXPECT_EQ(load_graph_json(json), g);
  EXPECT_EQ(load_graph_binary(save_graph_binary(g)), g);
}

TEST(GraphLowering, IdenticalSubexpressionsAreSharedOnce) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto W = variable<"W", float, shape<4, 4>>();
  // The same value written twice (on different lines: the first gives its location).
  const int la = __LINE__; auto a = exp(matmul(x, W));
  auto b = exp(matmul(x, W));
  auto c = constant(tensor<float, shape<4>>{1.f, 2.f, 3.f, 4.f});
  auto d = constant(tensor<float, shape<4>>{1.f, 2.f, 3.f, 4.f});  // equal data, different constant
  const graph g = to_graph(a + b + c + c + d, a * 2.0f + a * 3.0f + a * 2.0f);
  EXPECT_EQ(count_op(g, "exp"), 1u);
  EXPECT_EQ(count_op(g, "matmul"), 1u);
  EXPECT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.parameters.size(), 1u);
  EXPECT_EQ(g.constants.size(), 2u);  // c once, d on its own
  EXPECT_EQ(count_op(g, "literal"), 2u);  // 2.0 and 3.0
  EXPECT_EQ(count_op(g, "mul"), 2u);      // a*2 once, a*3
  EXPECT_EQ(node_named(g, "exp").where.line, static_cast<std::uint32_t>(la));
  expect_graph_prints_like(a + b + c + c + d, a * 2.0f + a * 3.0f + a * 2.0f);
  // The constant's elements travel with it.
  EXPECT_EQ((from_graph_tensor<float, shape<4>>(g.constants[0].data)(2)), 3.f);
}

TEST(GraphLowering, NodesAreMergedByOpAttributesAndOperandsOnly) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  // Built separately, equal as values: one node each (the second's operands are the first's).
  const graph g = to_graph(tanh(x * 2.f) + tanh(x * 2.f), sum(tanh(x * 2.f)));
  EXPECT_EQ(count_op(g, "tanh"), 1u);
  EXPECT_EQ(count_op(g, "mul"), 1u);
  EXPECT_EQ(count_op(g, "literal"), 1u);
  // 0 and -0 are different literals (x * -0.f is -0 where x > 0): two multiplications.
  const graph z = to_graph(x * 0.f + x * -0.f);
  EXPECT_EQ(count_op(z, "literal"), 2u);
  EXPECT_EQ(count_op(z, "mul"), 2u);
  // Different attributes are different nodes; the same op on other operands too.
  const graph r = to_graph(sum(x, axes<0>) * 1.f + sum(x, axes<1>, keepdims) + sum(x * 1.f, axes<0>));
  EXPECT_EQ(count_op(r, "sum"), 3u);
  EXPECT_EQ(count_op(r, "mul"), 2u);  // (sum * 1) and (x * 1)
  EXPECT_EQ(count_op(r, "literal"), 1u);
}

TEST(GraphLowering, LeavesWithOneNameAreRefused) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto x64 = placeholder<"x", double, shape<dyn, 3>>();
  auto vx = variable<"x", float, shape<3>>();
  try {
    to_graph(sum(x) + sum(cast<float>(x64)));
    ADD_FAILURE() << "no error";
  } catch (const graph_error& e) {
    EXPECT_NE(std::string(e.what()).find("to_graph: input 1 'x': the name is used by another input or parameter"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(to_graph(x + vx), graph_error);
  // The same leaf met twice, even in different scopes, is one input.
  auto a = scope("a", [&] { return placeholder<"x", float, shape<dyn, 3>>(); });
  EXPECT_EQ(to_graph(a + x).inputs.size(), 1u);
}

TEST(GraphLowering, InspectSummarisesTheGraph) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto W = variable<"W", float, shape<3, 2>>();
  auto b = variable<"b", float, shape<2>>();
  auto y = scope("dense", [&] { return relu(matmul(x, W) + b); });
  auto loss = sum(y * y);
  graph g = to_graph(loss, y);
  params p;
  p.set("W", tensor<float, shape<3, 2>>{{1, 2}, {3, 4}, {5, 6}});
  embed_parameters(g, p);
  EXPECT_EQ(inspect(g),
            "graph: 1 input, 2 parameters, 0 constants, 5 nodes, 2 outputs\n"
            "parameter elements: 8\n"
            "inputs:\n"
            "  x: f32[?,3]\n"
            "parameters:\n"
            "  W: f32[3,2] (value [3,2] embedded)\n"
            "  b: f32[2]\n"
            "ops:\n"
            "  add: 1\n"
            "  matmul: 1\n"
            "  mul: 1\n"
            "  relu: 1\n"
            "  sum: 1\n"
            "scopes:\n"
            "  dense: 3 nodes\n"
            "outputs:\n"
            "  0: node 7 'sum' (sum) : f32[]\n"
            "  1: node 5 'dense/relu' (relu) : f32[?,2]\n");
  // A parameter whose value does not fit its type is refused.
  params bad;
  bad.set("W", tensor<float, shape<2, 3>>{{1, 2, 3}, {4, 5, 6}});
  EXPECT_THROW(embed_parameters(g, bad), graph_error);
}

TEST(GraphLowering, DotHasAClusterPerScopeAndShapesOnEdges) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto W = variable<"W", float, shape<3, 2>>();
  auto W2 = variable<"W2", float, shape<2, 2>>();
  auto y = scope("outer", [&] {
    auto h = relu(matmul(x, W));
    return scope("inner", [&] { return matmul(h, W2); });
  });
  const graph g = to_graph(sum(y));
  const std::string dot = to_dot(g);
  EXPECT_TRUE(dot.starts_with("digraph symflow {\n"));
  EXPECT_TRUE(dot.ends_with("}\n"));
  const std::string outer = "subgraph cluster_0 {\n    label=\"outer\";\n";
  const std::string inner = "subgraph cluster_1 {\n      label=\"outer/inner\";\n";
  const auto po = dot.find(outer), pi = dot.find(inner);
  ASSERT_NE(po, std::string::npos) << dot;
  ASSERT_NE(pi, std::string::npos) << dot;
  EXPECT_LT(po, pi);
  // Node statements sit in their scope's cluster: ids 0 x, 1 W, 2 W2, 3 matmul, 4 relu, 5 matmul, 6 sum.
  EXPECT_NE(dot.find("    v3 [label=\"matmul\"];\n    v4 [label=\"relu\"];\n"), std::string::npos) << dot;
  EXPECT_NE(dot.find("      v5 [label=\"matmul\"];\n"), std::string::npos) << dot;
  EXPECT_NE(dot.find("  v0 [label=\"x\\nf32[?,3]\", shape=ellipse];\n"), std::string::npos) << dot;
  EXPECT_NE(dot.find("  v0 -> v3 [label=\"f32[?,3]\"];\n"), std::string::npos);
  EXPECT_NE(dot.find("  v4 -> v5 [label=\"f32[?,2]\"];\n"), std::string::npos);
  EXPECT_NE(dot.find("  v6 -> out0 [label=\"f32[]\"];\n"), std::string::npos);
  std::size_t edges = 0, open = 0, close = 0;
  for (std::size_t p = 0; (p = dot.find(" -> ", p)) != std::string::npos; ++p) ++edges;
  for (char c : dot) open += c == '{', close += c == '}';
  EXPECT_EQ(edges, 7u);  // 6 operand edges + 1 output
  EXPECT_EQ(open, close);
}

TEST(GraphLowering, DotParsesWithGraphviz) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto W = variable<"W", float, shape<3, 2>>();
  auto y = scope("outer", [&] { return scope("inner", [&] { return relu(matmul(x, W) * 0.5f); }); });
  const std::string dot = to_dot(to_graph(sum(y), y));
  if (std::system("command -v dot > /dev/null 2>&1") != 0) GTEST_SKIP() << "graphviz 'dot' is not installed";
  const std::string path = ::testing::TempDir() + "symflow_graph_test.dot";
  std::ofstream(path) << dot;
  EXPECT_EQ(std::system(("dot -Tsvg " + path + " -o /dev/null").c_str()), 0);
}
