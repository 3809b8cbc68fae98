// Kernels' operand dtypes in graph values. A kernel's result took its first operand's dtype and its
// runtime form then read every operand as that type: `symflow run` on a JSON graph computed a
// matmul of f32 by f64 as [4.625, 9.25] instead of [17, 39], and a concat of f64 and f32 read 16
// bytes from an 8-byte buffer (a heap over-read on an untrusted file). Each kernel's dtype rule is
// now its own typed rule (`accepts` / `result_type` in its op file) read over the dtype table
// (ir/op_registry.hpp), and a graph whose kernel operands it refuses is refused by validate() (so
// by every loader and by the interpreter's constructor) and by the builder, naming the node, the op
// and the dtypes. The expected rules below are written out by hand from the ops' documentation; an
// operand of a storage dtype (f16, u8, ...) is checked as the dtype it computes in (docs/dtypes.md),
// and the result is stored in the first operand's dtype.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/io/json.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

namespace {

using dtypes = std::vector<dtype>;
const dtype f32 = dtype::f32, f64 = dtype::f64, i32 = dtype::i32, i64 = dtype::i64, b8 = dtype::boolean;

bool floating(dtype d) { return d == f32 || d == f64; }
bool integer(dtype d) { return d == i32 || d == i64; }

// What each kernel accepts, from its doc string (docs/ops.md): a predicate on the operand dtypes.
const std::map<std::string, std::function<bool(const dtypes&)>>& documented_rules() {
  static const std::map<std::string, std::function<bool(const dtypes&)>> rules{
      {"matmul", [](const dtypes& d) { return floating(d[0]) && d[1] == d[0]; }},
      {"concat", [](const dtypes& d) { return d[1] == d[0]; }},  // checked on pairs (any dtype)
      {"conv2d", [](const dtypes& d) { return floating(d[0]) && d[1] == d[0]; }},
      {"conv2d_backprop_input", [](const dtypes& d) { return floating(d[0]) && d[1] == d[0]; }},   // like: any
      {"conv2d_backprop_filter", [](const dtypes& d) { return floating(d[0]) && d[1] == d[0]; }},  // like: any
      {"dropout", [](const dtypes& d) { return floating(d[0]); }},
      {"one_hot", [](const dtypes& d) { return integer(d[0]); }},
      {"max_pool2d", [](const dtypes& d) { return floating(d[0]); }},
      {"avg_pool2d", [](const dtypes& d) { return floating(d[0]); }},
      {"max_pool2d_backward", [](const dtypes& d) { return floating(d[0]) && d[1] == d[0]; }},
      {"avg_pool2d_backward", [](const dtypes& d) { return floating(d[0]); }},  // like: any
      {"reduced_count", [](const dtypes&) { return true; }},
      {"scatter", [](const dtypes&) { return true; }},  // part: any; like: any
      {"softmax_cross_entropy", [](const dtypes& d) { return floating(d[0]) && integer(d[1]); }},
      {"softmax_cross_entropy_backward",
       [](const dtypes& d) { return floating(d[0]) && d[1] == d[0] && integer(d[2]); }},
  };
  return rules;
}

// Every combination of n dtypes of the table.
std::vector<dtypes> combinations(std::size_t n) {
  std::vector<dtypes> out{{}};
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<dtypes> next;
    for (const auto& c : out)
      for (const auto& row : dtype_infos) {
        next.push_back(c);
        next.back().push_back(row.type);
      }
    out = std::move(next);
  }
  return out;
}

TEST(GraphKernelDtypes, EveryKernelsRuleIsTheDocumentedOne) {
  std::size_t checked = 0;
  for (const op_schema& s : op_schemas()) {
    // Control-flow ops take the dtypes their sub-graphs take (graph_control_flow_test).
    if (s.kind != node_kind::kernel || control_flow::is_control_flow(s.name)) continue;
    SCOPED_TRACE(std::string(s.name));
    ASSERT_GT(s.dtypes.operands, 0u) << "a kernel without a dtype rule";
    const auto rule = documented_rules().find(std::string(s.name));
    if (rule == documented_rules().end()) continue;  // a kernel added since: its op laws run it
    ++checked;
    for (const auto& c : combinations(s.dtypes.operands)) {
      const auto got = s.dtypes.result(c);
      dtypes wide = c;
      for (auto& d : wide) d = compute_dtype(d);
      EXPECT_EQ(got.has_value(), rule->second(wide)) << s.dtypes.refusal(s.name, c);
      // The result's dtype (ops with a `to` attribute take theirs from it instead).
      if (got && s.name != "one_hot" && s.name != "reduced_count") {
        EXPECT_EQ(*got, c[0]);
      }
    }
  }
  EXPECT_EQ(checked, documented_rules().size());
  // concat with any number of operands: each with the first.
  const dtype_rule& concat = find_op_schema("concat")->dtypes;
  EXPECT_EQ(concat.result({f64, f64, f64, f64}), f64);
  EXPECT_FALSE(concat.result({f64, f64, f64, f32}));
  EXPECT_FALSE(concat.result({f32, f64}));
  EXPECT_EQ(concat.result({dtype::f16, dtype::f16, dtype::f16}), dtype::f16);
  EXPECT_FALSE(concat.result({dtype::f16, f64}));
  // Values that are no dtype (a corrupt graph built in memory) are refused, not looked up.
  EXPECT_FALSE(find_op_schema("matmul")->dtypes.result({static_cast<dtype>(200), f32}));
  // The typed functions refuse the same: integer matmul is a compile error in C++ as in graphs.
  static_assert(!ops::matmul_op::accepts<std::int32_t, std::int32_t>);
  static_assert(!ops::matmul_op::accepts<float, double>);
  static_assert(ops::matmul_op::accepts<double, double>);
}

struct operand {
  dtype type;
  std::vector<std::int64_t> shape;
};
struct refused_case {
  std::string op;
  std::vector<operand> operands;  // dtypes the rule accepts
  std::vector<graph_attribute> attributes;
  std::size_t changed;  // this operand gets dtype `to`
  dtype to;
  std::string dtypes_text;  // "(f32, f64)"
};

std::vector<refused_case> refused_cases() {
  const std::vector<graph_attribute> conv{{"stride", std::int64_t(1)}, {"same_padding", false}};
  const std::vector<graph_attribute> pool{{"window", std::vector<std::int64_t>{2, 2}},
                                          {"stride", std::vector<std::int64_t>{2, 2}}};
  return {
      {"matmul", {{f32, {2, 3}}, {f32, {3, 1}}}, {}, 1, f64, "(f32, f64)"},
      {"matmul", {{f64, {2, 3}}, {f64, {3, 1}}}, {}, 0, f32, "(f32, f64)"},
      {"matmul", {{f32, {2, 3}}, {f32, {3, 1}}}, {}, 0, i32, "(i32, f32)"},
      {"concat", {{f64, {3}}, {f64, {5}}}, {{"axis", std::int64_t(0)}}, 1, f32, "(f64, f32)"},
      {"concat", {{f32, {2}}, {f32, {3}}, {f32, {1}}}, {{"axis", std::int64_t(0)}}, 2, i32, "(f32, f32, i32)"},
      {"conv2d", {{f32, {1, 5, 5, 2}}, {f32, {3, 3, 2, 4}}}, conv, 1, f64, "(f32, f64)"},
      {"conv2d", {{f64, {1, 5, 5, 2}}, {f64, {3, 3, 2, 4}}}, conv, 0, i64, "(i64, f64)"},
      {"conv2d_backprop_input", {{f32, {1, 3, 3, 4}}, {f32, {3, 3, 2, 4}}, {f32, {1, 5, 5, 2}}}, conv, 1, f64,
       "(f32, f64, f32)"},
      {"conv2d_backprop_filter", {{f32, {1, 5, 5, 2}}, {f32, {1, 3, 3, 4}}, {f32, {3, 3, 2, 4}}}, conv, 1, f64,
       "(f32, f64, f32)"},
      {"max_pool2d", {{f32, {1, 4, 4, 1}}}, pool, 0, i32, "(i32)"},
      {"avg_pool2d", {{f64, {1, 4, 4, 1}}}, pool, 0, b8, "(bool)"},
      {"max_pool2d_backward", {{f32, {1, 2, 2, 1}}, {f32, {1, 4, 4, 1}}}, pool, 1, f64, "(f32, f64)"},
      {"avg_pool2d_backward", {{f32, {1, 2, 2, 1}}, {f32, {1, 4, 4, 1}}}, pool, 0, i64, "(i64, f32)"},
      {"dropout", {{f32, {7}}}, {{"rate", 0.5}, {"seed", std::int64_t(3)}}, 0, i32, "(i32)"},
      {"one_hot", {{i32, {5}}}, {{"depth", std::int64_t(3)}, {"to", std::string("f32")}}, 0, f32, "(f32)"},
      {"one_hot", {{i64, {5}}}, {{"depth", std::int64_t(3)}, {"to", std::string("f64")}}, 0, b8, "(bool)"},
      {"softmax_cross_entropy", {{f32, {3, 5}}, {i32, {3}}}, {}, 1, f32, "(f32, f32)"},
      {"softmax_cross_entropy", {{f64, {3, 5}}, {i64, {3}}}, {}, 0, i64, "(i64, i64)"},
      {"softmax_cross_entropy_backward", {{f32, {3}}, {f32, {3, 5}}, {i64, {3}}}, {}, 0, f64, "(f64, f32, i64)"},
  };
}

// The graph of one node over inputs x0, x1, ...: built with the accepted dtypes, then one input's
// declared dtype changed (as a hand-written or corrupted file would have it).
graph graph_of(const refused_case& c, bool changed) {
  graph_builder b;
  std::vector<graph_handle> in;
  for (std::size_t k = 0; k < c.operands.size(); ++k)
    in.push_back(b.input("x" + std::to_string(k), c.operands[k].type, c.operands[k].shape));
  graph g = b.build({b.apply(c.op, in, c.attributes, "node")});
  if (changed) g.inputs[c.changed].type.type = c.to;
  return g;
}

template <class F>
std::string refusal_of(F&& f) {
  try {
    f();
  } catch (const graph_error& e) {
    return e.what();
  } catch (const value_error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(GraphKernelDtypes, GraphsWhoseKernelOperandsTheRuleRefusesAreRefusedBeforeAnythingRuns) {
  for (const auto& c : refused_cases()) {
    SCOPED_TRACE(c.op + " " + c.dtypes_text);
    const graph good = graph_of(c, false);
    EXPECT_NO_THROW(validate(good));
    const graph bad = graph_of(c, true);
    const std::string node = "node " + std::to_string(bad.first_node_id()) + " 'node' (" + c.op + "): ";
    const std::string want = node + "operands of dtypes " + c.dtypes_text + " are not accepted";
    // validate, both loaders and the interpreter's constructor: graph_error naming node, op and dtypes.
    EXPECT_NE(refusal_of([&] { validate(bad); }).find(want), std::string::npos) << refusal_of([&] { validate(bad); });
    EXPECT_NE(refusal_of([&] { (void)load_graph_json(save_graph_json(bad)); }).find(want), std::string::npos);
    EXPECT_NE(refusal_of([&] { (void)load_graph_binary(save_graph_binary(bad)); }).find(want), std::string::npos);
    EXPECT_THROW(interpreter{bad}, graph_error);
    // The builder applies the same rule (value_error naming the op and the dtypes).
    graph_builder b;
    std::vector<graph_handle> in;
    for (std::size_t k = 0; k < c.operands.size(); ++k)
      in.push_back(b.input("x" + std::to_string(k), k == c.changed ? c.to : c.operands[k].type, c.operands[k].shape));
    const std::string built = refusal_of([&] { b.apply(c.op, in, c.attributes, "node"); });
    EXPECT_NE(built.find(c.op + " 'node'"), std::string::npos) << built;
    EXPECT_NE(built.find("operands of dtypes " + c.dtypes_text + " are not accepted"), std::string::npos) << built;
  }
  // The message says what the op takes where that is short.
  const auto matmul = refused_cases()[0];
  EXPECT_NE(refusal_of([&] { validate(graph_of(matmul, true)); }).find("; matmul takes (f32, f32) or (f64, f64)"),
            std::string::npos);
}

// The two graphs of the report, in JSON as a user would write them: refused with one message naming
// the node; with the operands' dtypes made to agree they run, against values written out by hand.
std::string two_parameter_graph(const std::string& op, const std::string& attrs, const std::string& a_dtype,
                                const std::string& a_shape, const std::string& a_values, const std::string& b_dtype,
                                const std::string& b_shape, const std::string& b_values, const std::string& out_dtype,
                                const std::string& out_shape) {
  return R"({"format": "symflow.graph", "version": 1, "inputs": [],
  "parameters": [
    {"id":0,"name":"a","scope":"","dtype":")" + a_dtype + R"(","shape":)" + a_shape + R"(,"file":"","line":0,"value":{"shape":)" + a_shape + R"(,"values":)" + a_values + R"(}},
    {"id":1,"name":"b","scope":"","dtype":")" + b_dtype + R"(","shape":)" + b_shape + R"(,"file":"","line":0,"value":{"shape":)" + b_shape + R"(,"values":)" + b_values + R"(}}
  ],
  "constants": [],
  "nodes": [
    {"id":2,"op":")" + op + R"(","name":"n","inputs":[0,1],"attrs":)" + attrs + R"(,"dtype":")" + out_dtype + R"(","shape":)" + out_shape + R"(,"file":"model.json","line":7}
  ],
  "outputs": [2]})";
}

TEST(GraphKernelDtypes, TheReportedGraphsAreRefusedAndRunWhenTheirDtypesAgree) {
  const auto matmul = [](const std::string& a, const std::string& b) {
    return two_parameter_graph("matmul", "{}", a, "[2,2]", "[1,2,3,4]", b, "[2,1]", "[5,6]", a, "[2,1]");
  };
  const auto concat = [](const std::string& a, const std::string& b) {
    return two_parameter_graph("concat", R"({"axis":0})", a, "[3]", R"(["nan",-0.0,"inf"])", b, "[5]",
                               R"([1.5,"-inf",-0.0,3,1e30])", a, "[8]");
  };
  EXPECT_NE(refusal_of([&] { (void)load_graph_json(matmul("f32", "f64")); })
                .find("graph JSON: node 2 'n' (matmul): operands of dtypes (f32, f64) are not accepted"),
            std::string::npos);
  EXPECT_NE(refusal_of([&] { (void)load_graph_json(concat("f64", "f32")); })
                .find("graph JSON: node 2 'n' (concat): operands of dtypes (f64, f32) are not accepted"),
            std::string::npos);
  EXPECT_NE(refusal_of([&] { (void)load_graph_json(matmul("i32", "i32")); }).find("(i32, i32) are not accepted"),
            std::string::npos);

  // [[1, 2], [3, 4]] x [[5], [6]] = [[17], [39]] (matmul's doc example).
  const auto f = interpreter(load_graph_json(matmul("f32", "f32"))).run({});
  ASSERT_EQ(f[0].type(), f32);
  EXPECT_EQ(f[0].data<float>()[0], 17.f);
  EXPECT_EQ(f[0].data<float>()[1], 39.f);
  const auto d = interpreter(load_graph_json(matmul("f64", "f64"))).run({});
  ASSERT_EQ(d[0].type(), f64);
  EXPECT_EQ(d[0].data<double>()[0], 17.0);
  EXPECT_EQ(d[0].data<double>()[1], 39.0);
  // concat copies bits: NaN, -0, infinities, odd lengths.
  const auto out = interpreter(load_graph_json(concat("f64", "f64"))).run({});
  ASSERT_EQ(out[0].extents(), (runtime_extents{8}));
  const double inf = std::numeric_limits<double>::infinity();
  const double want[] = {std::numeric_limits<double>::quiet_NaN(), -0.0, inf, 1.5, -inf, -0.0, 3, 1e30};
  for (std::size_t i = 0; i < 8; ++i)
    EXPECT_EQ(std::bit_cast<std::uint64_t>(out[0].data<double>()[i]), std::bit_cast<std::uint64_t>(want[i])) << i;
}

// Kernels whose rule admits operands of different dtypes still run, and read each operand as its
// own dtype: scatter's part (f64) into a like of another dtype, labels of either integer dtype,
// a convolution adjoint whose like operand (extents only) is an integer tensor.
TEST(GraphKernelDtypes, MixedDtypesTheRulesAdmitRunCorrectly) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  {
    graph_builder b;
    const auto part = b.input("part", f64, {3});
    const auto like = b.input("like", i32, {7});
    const graph g = b.build({b.apply("scatter", {part, like},
                                     {{"axis", std::int64_t(0)}, {"begin", std::int64_t(2)}, {"end", std::int64_t(5)}})});
    runtime_tensor p(f64, {3});
    p.data<double>()[0] = nan, p.data<double>()[1] = -0.0, p.data<double>()[2] = -inf;
    const auto out = interpreter(g).run({{"part", p}, {"like", runtime_tensor(i32, {7})}});
    ASSERT_EQ(out[0].type(), f64);
    const double want[] = {0.0, 0.0, nan, -0.0, -inf, 0.0, 0.0};
    for (std::size_t i = 0; i < 7; ++i)
      EXPECT_EQ(std::bit_cast<std::uint64_t>(out[0].data<double>()[i]), std::bit_cast<std::uint64_t>(want[i])) << i;
  }
  for (dtype label : {i32, i64}) {
    graph_builder b;
    const auto logits = b.input("logits", f64, {3, 5});
    const auto labels = b.input("labels", label, {3});
    const graph g = b.build({b.apply("softmax_cross_entropy", {logits, labels})});
    runtime_tensor l(f64, {3, 5}), y(label, {3});
    for (std::size_t i = 0; i < 15; ++i) l.data<double>()[i] = double(i % 7) - 2.5;
    const std::int64_t ys[] = {4, -1, 0};
    for (std::size_t i = 0; i < 3; ++i) {
      if (label == i32) y.data<std::int32_t>()[i] = std::int32_t(ys[i]);
      else y.data<std::int64_t>()[i] = ys[i];
    }
    const auto out = interpreter(g).run({{"logits", l}, {"labels", y}});
    ASSERT_EQ(out[0].type(), f64);
    for (std::size_t n = 0; n < 3; ++n) {
      long double s = 0;
      for (std::size_t k = 0; k < 5; ++k) s += std::exp(static_cast<long double>(l.data<double>()[n * 5 + k]));
      const double want = ys[n] < 0 ? 0.0 : double(std::log(s) - l.data<double>()[n * 5 + std::size_t(ys[n])]);
      EXPECT_NEAR(out[0].data<double>()[n], want, 1e-14) << n;
    }
  }
  {
    // conv2d_backprop_input with like of i64 gives what it gives with like of f32.
    const std::vector<graph_attribute> conv{{"stride", std::int64_t(1)}, {"same_padding", false}};
    runtime_tensor g4(f32, {1, 3, 3, 1}), w(f32, {3, 3, 1, 1});
    for (std::size_t i = 0; i < 9; ++i) g4.data<float>()[i] = float(i) - 4.5f, w.data<float>()[i] = 0.25f * float(i % 4 + 1);
    std::vector<runtime_tensor> results;
    for (dtype like_dtype : {f32, i64}) {
      graph_builder b;
      const auto gh = b.input("g", f32, {1, 3, 3, 1});
      const auto wh = b.input("w", f32, {3, 3, 1, 1});
      const auto like = b.input("like", like_dtype, {1, 5, 5, 1});
      const graph g = b.build({b.apply("conv2d_backprop_input", {gh, wh, like}, conv)});
      results.push_back(interpreter(g).run({{"g", g4}, {"w", w}, {"like", runtime_tensor(like_dtype, {1, 5, 5, 1})}})[0]);
    }
    ASSERT_EQ(results[1].type(), f32);
    EXPECT_EQ(std::memcmp(results[0].bytes(), results[1].bytes(), results[0].byte_size()), 0);
    EXPECT_EQ(results[0].data<float>()[0], -4.5f * 0.25f);  // the corner only the first window covers: g[0,0] w[0,0]
  }
}

}  // namespace
