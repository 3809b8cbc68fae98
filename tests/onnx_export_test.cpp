// ONNX export (io/onnx.hpp): every op with an ONNX form, exported from a small graph, passes ONNX's
// own checker and, evaluated by an independent NumPy reference that knows only the ONNX operator
// specification (onnx_reference.py), gives what symflow's interpreter gives on random inputs with
// NaN, ±Inf and ±0 among them. Ops without a form are refused, all of them in one message.
#include <gtest/gtest.h>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>

#include <symflow/io/npy.hpp>
#include <symflow/io/onnx.hpp>
#include <symflow/runtime/builder.hpp>
#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/handle_ops.hpp>
#include <symflow/runtime/onnx_import.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>

namespace {
using namespace symflow;
namespace fs = std::filesystem;

// Random values in [-2, 2), with NaN, ±Inf, ±0 and 1 at every fifth element unless `finite`.
template <class T, class S>
tensor<T, S> random_values(std::array<std::size_t, S::rank> extents, unsigned seed, bool finite = false) {
  tensor<T, S> t(extents, uninitialized);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-2, 2);
  for (auto& v : t) v = T(d(rng));
  if (!finite) {
    using L = std::numeric_limits<T>;
    const T specials[] = {L::quiet_NaN(), L::infinity(), -L::infinity(), T(0), -T(0), T(1)};
    for (std::size_t i = seed % 5, k = 0; i < t.size(); i += 5, ++k) t.data()[i] = specials[k % std::size(specials)];
  }
  return t;
}

class OnnxExport : public ::testing::Test {
 protected:
  static fs::path cases() {
    static const fs::path dir = [] {
      const fs::path d = fs::temp_directory_path() / ("symflow-onnx-export-" + std::to_string(::getpid()));
      fs::remove_all(d);
      fs::create_directories(d);
      return d;
    }();
    return dir;
  }

  // Exports g, checks it with ONNX's checker and strict shape inference here, and writes it with
  // its inputs and the interpreter's outputs for the NumPy reference.
  static void write_case(const std::string& name, const graph& g, const runtime_feeds& feeds, const params* store = nullptr) {
    SCOPED_TRACE(name);
    const onnx::ModelProto model = to_onnx(g, store);
    EXPECT_NO_THROW(onnx::checker::check_model(model)) << name;
    onnx::ModelProto inferred = model;
    onnx::ShapeInferenceOptions strict{true, 1, true};
    EXPECT_NO_THROW(onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(), strict)) << name;
    const fs::path dir = cases() / name;
    fs::create_directories(dir);
    std::ofstream(dir / "model.onnx", std::ios::binary) << model.SerializeAsString();
    for (std::size_t k = 0; k < g.inputs.size(); ++k)
      save_npy((dir / ("input_" + std::to_string(k) + ".npy")).string(), feeds.at(g.inputs[k].name).to_graph_tensor());
    runtime_feeds used;  // the interpreter refuses feeds that name nothing in the graph
    for (const graph_leaf& leaf : g.inputs) used.insert_or_assign(leaf.name, feeds.at(leaf.name));
    const auto outputs = run_graph(g, used, store);
    for (std::size_t k = 0; k < outputs.size(); ++k)
      save_npy((dir / ("expected_" + std::to_string(k) + ".npy")).string(), outputs[k].to_graph_tensor());
    expect_round_trip(name, model, used, outputs);
  }

  // The exported model imported again (runtime/onnx_import.hpp) gives the same outputs bit for bit:
  // an op written as a composition is a function call that reads back as the op.
  static void expect_round_trip(const std::string& name, const onnx::ModelProto& model, const runtime_feeds& feeds,
                                const std::vector<runtime_tensor>& want) {
    graph back;
    try {
      back = from_onnx(model);
    } catch (const onnx_import_error& e) {
      ADD_FAILURE() << name << " does not read back: " << e.what();
      return;
    }
    const auto got = run_graph(back, feeds);
    ASSERT_EQ(got.size(), want.size()) << name;
    for (std::size_t k = 0; k < got.size(); ++k) {
      const graph_tensor a = got[k].to_graph_tensor(), b = want[k].to_graph_tensor();
      ASSERT_EQ(a.type, b.type) << name << " output " << k;
      ASSERT_EQ(a.extents, b.extents) << name << " output " << k;
      EXPECT_EQ(a.bytes, b.bytes) << name << " output " << k << " differs after export and import";
    }
  }

  template <class... E>
  static void write_expression_case(const std::string& name, const runtime_feeds& feeds, const E&... e) {
    write_case(name, to_graph(e...), feeds);
  }
};

TEST_F(OnnxExport, EveryFormMatchesAnIndependentReference) {
  const auto x = placeholder<"x", float, shape<dyn, 5>>();
  const auto y = placeholder<"y", float, shape<dyn, 5>>();
  const auto b = placeholder<"b", float, shape<5>>();
  const auto m = placeholder<"m", float, shape<5, 4>>();
  const runtime_feeds xy{{"x", runtime_tensor(random_values<float, shape<dyn, 5>>({3, 5}, 1))},
                         {"y", runtime_tensor(random_values<float, shape<dyn, 5>>({3, 5}, 2))},
                         {"b", runtime_tensor(random_values<float, shape<5>>({5}, 3))},
                         {"m", runtime_tensor(random_values<float, shape<5, 4>>({5, 4}, 4, true))}};
  const runtime_feeds finite{{"x", runtime_tensor(random_values<float, shape<dyn, 5>>({3, 5}, 5, true))},
                             {"y", runtime_tensor(random_values<float, shape<dyn, 5>>({3, 5}, 6, true))},
                             {"m", runtime_tensor(random_values<float, shape<5, 4>>({5, 4}, 4, true))}};
  // Elementwise, one ONNX node each.
  write_expression_case("abs", xy, abs(x));
  write_expression_case("ceil", xy, ceil(x));
  write_expression_case("cos", xy, cos(x));
  write_expression_case("erf", xy, erf(x));
  write_expression_case("exp", xy, exp(x));
  write_expression_case("floor", xy, floor(x));
  write_expression_case("log", xy, log(x));
  write_expression_case("neg", xy, -x);
  write_expression_case("relu", xy, relu(x));
  write_expression_case("round", xy, round(x * 2.0f));
  write_expression_case("sigmoid", xy, sigmoid(x));
  write_expression_case("sign", xy, sign(x));
  write_expression_case("sin", xy, sin(x));
  write_expression_case("softplus", xy, softplus(x));
  write_expression_case("softsign", xy, softsign(x));
  write_expression_case("sqrt", xy, sqrt(x));
  write_expression_case("tanh", xy, tanh(x));
  write_expression_case("selu", xy, selu(x));
  write_expression_case("add_broadcast", xy, x + b);
  write_expression_case("sub", xy, x - y);
  write_expression_case("mul_literal", xy, x * 2.5f);
  write_expression_case("div", xy, x / y);
  write_expression_case("pow", xy, pow(x, y));
  write_expression_case("maximum", xy, maximum(x, y));
  write_expression_case("minimum", xy, minimum(x, b));
  write_expression_case("comparisons", xy, equal(x, y), x > y, x >= b, x < y, x <= y, not_equal(x, y));
  write_expression_case("logical", xy, logical_and(x > 0.0f, y > 0.0f), logical_or(x > 0.0f, y > 0.0f),
                        logical_not(x > y));
  write_expression_case("where", xy, where(x > y, x, y));
  write_expression_case("prelu", xy, prelu(x, b));
  // Elementwise, several ONNX nodes.
  write_expression_case("square", xy, square(x));
  write_expression_case("rsqrt", xy, rsqrt(x));
  write_expression_case("log1p", finite, log1p(abs(x)));
  write_expression_case("silu", xy, silu(x));
  write_expression_case("gelu", finite, gelu(x));
  write_expression_case("elu", xy, elu(x), elu(x, b));
  write_expression_case("clip", xy, clip(x, b, b + 1.0f));
  write_expression_case("cast", finite, cast<double>(x), cast<std::int32_t>(x * 10.0f));
  write_expression_case("expand_as", xy, expand_as(b, x));
  // Reductions.
  write_expression_case("sum", xy, sum(x, axes<1>), sum(x));
  write_expression_case("mean", xy, mean(x, axes<0>, keepdims));
  write_expression_case("max", xy, max(x, axes<1>));
  write_expression_case("min", xy, min(x, axes<0>));
  write_expression_case("prod", finite, prod(x, axes<1>));
  // Views and kernels.
  write_expression_case("transpose", xy, transpose(x));
  write_expression_case("reshape", xy, reshape<shape<5, dyn>>(x));
  write_expression_case("expand_dims", xy, expand_dims<2u>(x));
  write_expression_case("concat", xy, concat<1>(x, y));
  write_expression_case("narrow", xy, narrow<1>(x, 1, 5, 2));
  write_expression_case("matmul", finite, matmul(x, m));
  write_expression_case("argmax", xy, argmax<1>(x), argmin<0>(x, keepdims));
  write_expression_case("cumsum", xy, cumsum<1>(x), cumsum<0, true, true>(x));
  write_expression_case("flip", xy, flip<1>(x), flip<0>(x));
  write_expression_case("trilu", xy, tril(x, -1), triu(x, 1));
  write_expression_case("pad", xy, pad<1, 2, 0, 3>(x), pad<pad_mode::reflect, 0, 2, 0, 1>(x),
                        pad<pad_mode::edge, 1, 0, 2, 1>(x));
  {
    const auto picks = placeholder<"picks", std::int32_t, shape<dyn, 5>>();
    tensor<std::int32_t, shape<dyn, 5>> pick_values({3, 5}, uninitialized);
    for (std::size_t i = 0; i < pick_values.size(); ++i) pick_values.data()[i] = std::int32_t(i * 7 % 10) - 5;  // [-5, 5)
    runtime_feeds feeds = xy;
    feeds.emplace("picks", runtime_tensor(pick_values));
    write_expression_case("gather_elements", feeds, gather_elements<1>(x, picks));
  }
  {
    const auto like = placeholder<"like", float, shape<dyn>>();
    runtime_feeds feeds = xy;
    feeds.emplace("like", runtime_tensor(random_values<float, shape<dyn>>({15}, 8)));
    write_expression_case("reshape_as", feeds, reshape_as(x, like));
  }
  {
    // The per-example training loss: rows with NaN and infinities, a padding label (-1) and the
    // mean of it, as classifiers train on it.
    const auto labels = placeholder<"labels", std::int64_t, shape<dyn>>();
    tensor<std::int64_t, shape<dyn>> label_values({3}, uninitialized);
    const std::int64_t picks[] = {4, -1, 0};
    std::copy(std::begin(picks), std::end(picks), label_values.begin());
    runtime_feeds feeds = xy;
    feeds.emplace("labels", runtime_tensor(label_values));
    write_expression_case("softmax_cross_entropy", feeds, softmax_cross_entropy(x, labels),
                          mean(softmax_cross_entropy(y, labels)));
    // Labels below 0 and from the depth up are zero rows (ONNX's OneHot counts negative ones from
    // the end: the form moves them out of range).
    const auto ids = placeholder<"ids", std::int32_t, shape<dyn, 2>>();
    tensor<std::int32_t, shape<dyn, 2>> id_values({3, 2}, uninitialized);
    const std::int32_t picks2[] = {0, 4, -1, 5, -5, 2};
    std::copy(std::begin(picks2), std::end(picks2), id_values.begin());
    feeds.emplace("ids", runtime_tensor(id_values));
    write_expression_case("one_hot", feeds, one_hot<5>(ids), one_hot<3, std::int64_t>(ids));
  }
  {
    // NHWC convolutions and pooling (through Transposes to ONNX's NCHW), and an embedding lookup.
    const auto image = placeholder<"image", float, shape<dyn, 7, 6, 4>>();
    const auto filter = placeholder<"filter", float, shape<3, 3, 4, 6>>();
    const auto grouped = placeholder<"grouped", float, shape<2, 2, 2, 6>>();
    const auto ids = placeholder<"ids", std::int32_t, shape<dyn>>();
    tensor<std::int32_t, shape<dyn>> id_values({5}, uninitialized);
    const std::int32_t picks[] = {2, 0, -1, 1, -3};
    std::copy(std::begin(picks), std::end(picks), id_values.begin());
    const runtime_feeds images{
        {"image", runtime_tensor(random_values<float, shape<dyn, 7, 6, 4>>({2, 7, 6, 4}, 9, true))},
        {"filter", runtime_tensor(random_values<float, shape<3, 3, 4, 6>>({3, 3, 4, 6}, 10, true))},
        {"grouped", runtime_tensor(random_values<float, shape<2, 2, 2, 6>>({2, 2, 2, 6}, 11, true))},
        {"x", xy.at("x")},
        {"ids", runtime_tensor(id_values)}};
    write_expression_case("conv2d_same", images, conv2d<1, padding::same>(image, filter));
    write_expression_case("conv2d_strided_dilated", images, conv2d<2, padding::same, 2>(image, filter));
    write_expression_case("conv2d_valid_groups", images, conv2d<2, padding::valid, 1, 2>(image, grouped));
    write_expression_case("max_pool2d", images, max_pool2d<2>(image), max_pool2d<3, 2, 1>(image));
    write_expression_case("avg_pool2d", images, avg_pool2d<2>(image),
                          avg_pool2d<3, 2, 1, pool_options::count_include_pad>(image), avg_pool2d<3, 2, 1>(image));
    write_expression_case("gather", images, gather<1>(x, ids), gather<0>(x, ids));
  }
  // Graph outputs: the same value twice, and an input.
  write_expression_case("outputs", xy, x + y, x + y, x);

  // f64.
  const auto xd = placeholder<"x", double, shape<dyn, 5>>();
  const runtime_feeds xd_feeds{{"x", runtime_tensor(random_values<double, shape<dyn, 5>>({4, 5}, 7))}};
  write_expression_case("f64", xd_feeds, exp(xd) * 0.5 + sum(xd, axes<1>, keepdims));

  std::size_t written = 0;
  for (const auto& entry : fs::directory_iterator(cases())) written += entry.is_directory();
  const std::string command = "\"" SYMFLOW_PYTHON3 "\" \"" SYMFLOW_ONNX_REFERENCE "\" \"" + cases().string() + "\" > \"" +
                              (cases() / "report.txt").string() + "\" 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream report(cases() / "report.txt");
  const std::string text((std::istreambuf_iterator<char>(report)), std::istreambuf_iterator<char>());
  EXPECT_EQ(status, 0) << text;
  const std::string all = std::to_string(written) + " of " + std::to_string(written) + " cases agree";
  EXPECT_NE(text.find(all), std::string::npos) << text;
  std::cout << text.substr(text.rfind('\n', text.size() - 2) + 1);  // "N of N cases agree"
  if (status == 0 && !std::getenv("SYMFLOW_KEEP_ONNX_CASES")) fs::remove_all(cases());
}

TEST_F(OnnxExport, ParametersBecomeInitialisersWithTheStoresValues) {
  const auto x = placeholder<"x", float, shape<dyn, 5>>();
  const auto w1 = variable<"dense/W", float, shape<5, 7>>();
  const auto b1 = variable<"dense/b", float, shape<7>>();
  const auto w2 = variable<"out/W", float, shape<7, 3>>();
  const auto logits = matmul(relu(matmul(x, w1) + b1), w2);
  params store;
  store.set("dense/W", random_values<float, shape<5, 7>>({5, 7}, 11, true));
  store.set("dense/b", random_values<float, shape<7>>({7}, 12, true));
  store.set("out/W", random_values<float, shape<7, 3>>({7, 3}, 13, true));
  const graph g = to_graph(logits);
  const onnx::ModelProto model = to_onnx(g, &store);
  ASSERT_EQ(model.graph().input_size(), 1);
  EXPECT_EQ(model.graph().input(0).name(), "x");
  EXPECT_EQ(model.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "x_dim0");
  int weights = 0;
  for (const auto& t : model.graph().initializer()) weights += t.name() == "dense/W" || t.name() == "out/W";
  EXPECT_EQ(weights, 2);
  // Without a store the parameters are inputs.
  EXPECT_EQ(to_onnx(g).graph().input_size(), 4);

  const runtime_feeds feeds{{"x", runtime_tensor(random_values<float, shape<dyn, 5>>({6, 5}, 14, true))}};
  const fs::path dir = fs::temp_directory_path() / ("symflow-onnx-mlp-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const fs::path case_dir = dir / "mlp";
  fs::create_directories(case_dir);
  save_onnx(g, (case_dir / "model.onnx").string(), &store);
  save_npy((case_dir / "input_0.npy").string(), feeds.at("x").to_graph_tensor());
  save_npy((case_dir / "expected_0.npy").string(), run_graph(g, feeds, &store).at(0).to_graph_tensor());
  const std::string command = "\"" SYMFLOW_PYTHON3 "\" \"" SYMFLOW_ONNX_REFERENCE "\" \"" + dir.string() + "\"";
  EXPECT_EQ(std::system(command.c_str()), 0);
  fs::remove_all(dir);

  // A store whose value has other extents is refused, naming the parameter.
  params wrong = store;
  wrong.set("out/W", random_values<float, shape<7, 4>>({7, 4}, 13, true));
  try {
    (void)to_onnx(g, &wrong);
    ADD_FAILURE() << "expected onnx_error";
  } catch (const onnx_error& e) {
    EXPECT_NE(std::string(e.what()).find("'out/W'"), std::string::npos) << e.what();
  }
}

TEST_F(OnnxExport, OpsWithoutAFormAreAllNamedInOneError) {
  const auto x = placeholder<"x", float, shape<dyn, 5>>();
  const auto like = placeholder<"like", float, shape<dyn, 9>>();
  const graph g = to_graph(scatter<1>(x, like, 2, 7) + 1.0f, dropout(x, 0.5, std::uint64_t(7)));
  try {
    (void)to_onnx(g);
    ADD_FAILURE() << "expected onnx_error";
  } catch (const onnx_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("2 node(s) have no ONNX form"), std::string::npos) << what;
    EXPECT_NE(what.find("op 'scatter'"), std::string::npos) << what;
    EXPECT_NE(what.find("op 'dropout'"), std::string::npos) << what;
  }
}

// An op written as several ONNX nodes is a call of a model-local function in the domain "symflow"
// (one function per distinct composition: gelu's constants are f32 or f64, rsqrt's are none), which
// passes ONNX's checker and reads back as the op itself; one ONNX node stays one node.
TEST_F(OnnxExport, CompositionsAreFunctionsThatReadBackAsTheirOps) {
  const auto x = placeholder<"x", float, shape<dyn, 5>>();
  const auto xd = placeholder<"xd", double, shape<dyn, 5>>();
  const graph g = to_graph(gelu(rsqrt(abs(x))), gelu(x) * 2.0f, gelu(xd), rsqrt(xd));
  const onnx::ModelProto model = to_onnx(g);
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  std::map<std::string, int> functions;
  for (const auto& f : model.functions()) {
    EXPECT_EQ(f.domain(), "symflow");
    ++functions[f.name()];
  }
  EXPECT_EQ(functions, (std::map<std::string, int>{{"gelu", 1}, {"gelu__2", 1}, {"rsqrt", 1}}));
  int calls = 0;
  for (const auto& n : model.graph().node()) {
    if (n.domain() != "symflow") continue;
    ++calls;
    EXPECT_TRUE(functions.count(n.op_type())) << n.op_type();
  }
  EXPECT_EQ(calls, 5);
  bool imports_symflow = false;
  for (const auto& o : model.opset_import()) imports_symflow |= o.domain() == "symflow" && o.version() == 1;
  EXPECT_TRUE(imports_symflow);
  const graph back = from_onnx(model);
  std::map<std::string, int> ops;
  for (const graph_node& n : back.nodes) ++ops[n.op];
  EXPECT_EQ(ops["gelu"], 3);
  EXPECT_EQ(ops["rsqrt"], 2);
  EXPECT_EQ(ops["abs"], 1);
  EXPECT_EQ(ops.count("erf"), 0u);
  const runtime_feeds feeds{{"x", runtime_tensor(random_values<float, shape<dyn, 5>>({4, 5}, 11))},
                            {"xd", runtime_tensor(random_values<double, shape<dyn, 5>>({4, 5}, 12))}};
  expect_round_trip("functions", model, feeds, run_graph(g, feeds));  // bit for bit
  // (EveryFormMatchesAnIndependentReference runs the functions' bodies in the NumPy reference.)
}

runtime_tensor random_f64(runtime_extents extents, unsigned seed) {
  runtime_tensor t(dtype::f64, extents);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-1, 1);
  for (std::size_t i = 0; i < t.size(); ++i) t.data<double>()[i] = d(rng);
  return t;
}

// The ONNX model's graph passes the checker and strict shape inference, and reads back into a
// graph that gives the same outputs, bit for bit, and the same gradients.
graph expect_valid_round_trip(const graph& g, const runtime_feeds& feeds, const std::vector<std::string>& wrt) {
  const onnx::ModelProto model = to_onnx(g);
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  onnx::ModelProto inferred = model;
  onnx::ShapeInferenceOptions strict{true, 1, true};
  EXPECT_NO_THROW(onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(), strict));
  graph back;
  try {
    back = from_onnx(model);
  } catch (const onnx_import_error& e) {
    ADD_FAILURE() << "the export does not read back: " << e.what();
    return back;
  }
  const auto want = run_graph(g, feeds), got = run_graph(back, feeds);
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < std::min(got.size(), want.size()); ++k)
    EXPECT_EQ(got[k].to_graph_tensor(), want[k].to_graph_tensor()) << "output " << k;
  const auto dwant = run_graph(differentiate(g, wrt), feeds), dgot = run_graph(differentiate(back, wrt), feeds);
  for (std::size_t k = 0; k < std::min(dgot.size(), dwant.size()); ++k)
    for (std::size_t i = 0; i < dwant[k].size(); ++i)
      EXPECT_NEAR(dgot[k].data<double>()[i], dwant[k].data<double>()[i], 1e-12) << "gradient output " << k << "[" << i << "]";
  return back;
}

// A scan exports as ONNX's Scan: its body takes the state and the step, reads the weights from the
// enclosing graph by name, and gives the next state as state and as scan output. Imported, it is a
// scan again whose operands are the values the body reads; both give a float64 loop's states.
TEST(OnnxControlFlow, ScanIsOnnxScanWithTheWeightsReadFromTheEnclosingGraph) {
  constexpr std::int64_t steps = 5, batch = 3, in = 4, hidden = 6;
  graph_builder body_builder;
  auto h = body_builder.input("h", dtype::f64, {-1, hidden});
  auto x = body_builder.input("x", dtype::f64, {-1, in});
  auto W = body_builder.input("W", dtype::f64, {in, hidden});
  auto U = body_builder.input("U", dtype::f64, {hidden, hidden});
  auto bias = body_builder.input("b", dtype::f64, {hidden});
  const graph body = body_builder.build({tanh(matmul(x, W) + matmul(h, U) + bias) * 0.5 + h * 0.5});
  graph_builder b;
  auto h0 = b.input("h0", dtype::f64, {batch, hidden});
  auto xs = b.input("xs", dtype::f64, {-1, batch, in});
  auto Wv = b.input("W", dtype::f64, {in, hidden});
  auto Uv = b.input("U", dtype::f64, {hidden, hidden});
  auto bv = b.input("b", dtype::f64, {hidden});
  auto states = scan(body, h0, xs, {Wv, Uv, bv});
  const graph g = b.build({sum(states * states), states});
  runtime_feeds feeds;
  feeds.insert_or_assign("h0", random_f64({batch, hidden}, 1));
  feeds.insert_or_assign("xs", random_f64({steps, batch, in}, 2));
  feeds.insert_or_assign("W", random_f64({in, hidden}, 3));
  feeds.insert_or_assign("U", random_f64({hidden, hidden}, 4));
  feeds.insert_or_assign("b", random_f64({hidden}, 5));

  const onnx::ModelProto model = to_onnx(g);
  const onnx::NodeProto* scan_node = nullptr;
  for (const auto& n : model.graph().node())
    if (n.op_type() == "Scan") scan_node = &n;
  ASSERT_NE(scan_node, nullptr);
  ASSERT_EQ(scan_node->input_size(), 2);  // the state and the sequence; the weights are read by name
  EXPECT_EQ(scan_node->output(0), "");    // the final state is not needed
  ASSERT_EQ(scan_node->attribute_size(), 2);
  const onnx::GraphProto& onnx_body = scan_node->attribute(1).g();
  EXPECT_EQ(onnx_body.input_size(), 2);
  EXPECT_EQ(onnx_body.output_size(), 2);

  const graph back = expect_valid_round_trip(g, feeds, {"h0", "xs", "W", "U", "b"});
  const auto got = run_graph(back, feeds);
  ASSERT_EQ(got.size(), 2u);
  // The float64 loop.
  const double* xv = feeds.at("xs").data<double>();
  const double *Wp = feeds.at("W").data<double>(), *Up = feeds.at("U").data<double>(), *bp = feeds.at("b").data<double>();
  std::vector<double> state(feeds.at("h0").data<double>(), feeds.at("h0").data<double>() + batch * hidden);
  for (std::int64_t t = 0; t < steps; ++t) {
    std::vector<double> next(state.size());
    for (std::int64_t r = 0; r < batch; ++r)
      for (std::int64_t j = 0; j < hidden; ++j) {
        double a = bp[j];
        for (std::int64_t i = 0; i < in; ++i) a += xv[(t * batch + r) * in + i] * Wp[i * hidden + j];
        for (std::int64_t i = 0; i < hidden; ++i) a += state[r * hidden + i] * Up[i * hidden + j];
        next[r * hidden + j] = std::tanh(a) * 0.5 + state[r * hidden + j] * 0.5;
      }
    state = next;
    for (std::size_t i = 0; i < state.size(); ++i)
      EXPECT_NEAR(got[1].data<double>()[t * batch * hidden + std::int64_t(i)], state[i], 1e-13) << "step " << t;
  }
}

// A cond exports as ONNX's If, whose branches read the operands by name; inside a scan's body too.
// Imported, the two give what the original gives, and ONNX's Scan with a final state (output 0,
// ONNX's own scan tests) reads as the last state.
TEST(OnnxControlFlow, CondIsOnnxIfAndNestsInsideAScan) {
  auto branch = [](auto make) {
    graph_builder b;
    std::vector<graph_handle> in{b.input("s", dtype::f64, {3}), b.input("x", dtype::f64, {3})};
    return b.build({make(in)});
  };
  const graph add_branch = branch([](auto& in) { return in[0] + in[1]; });
  const graph halve_branch = branch([](auto& in) { return in[0] * 0.5; });
  const graph body = branch([&](auto& in) { return cond(sum(in[1]) > 0.0, add_branch, halve_branch, {in[0], in[1]}); });
  graph_builder b;
  auto s = b.input("s", dtype::f64, {3});
  auto xs = b.input("xs", dtype::f64, {-1, 3});
  const graph g = b.build({sum(scan(body, s, xs)), scan(body, s, xs), cond(sum(s) > 0.0, add_branch, halve_branch, {s, s})});
  for (const auto steps : {std::size_t(7), std::size_t(1), std::size_t(0)}) {
    SCOPED_TRACE(steps);
    runtime_feeds feeds;
    feeds.insert_or_assign("s", random_f64({3}, 5));
    feeds.insert_or_assign("xs", random_f64({steps, 3}, 6));
    (void)expect_valid_round_trip(g, feeds, {"s", "xs"});
  }

  // ONNX's form of a scan with its final state named: output 0 is the last state, s itself when
  // there are no steps.
  onnx::ModelProto model = to_onnx(g);
  for (auto& n : *model.mutable_graph()->mutable_node())
    if (n.op_type() == "Scan" && n.output(0).empty()) {
      n.set_output(0, "final_" + n.output(1));
      auto& info = *model.mutable_graph()->add_output();
      info.set_name(n.output(0));
      break;
    }
  const graph back = from_onnx(model);
  ASSERT_EQ(back.outputs.size(), 4u);
  for (const auto steps : {std::size_t(4), std::size_t(0)}) {
    runtime_feeds feeds;
    feeds.insert_or_assign("s", random_f64({3}, 8));
    feeds.insert_or_assign("xs", random_f64({steps, 3}, 9));
    const auto out = run_graph(back, feeds);
    const graph_tensor last = out[3].to_graph_tensor();
    ASSERT_EQ(last.extents, (std::vector<std::int64_t>{3}));
    for (std::size_t i = 0; i < 3; ++i)
      EXPECT_EQ(out[3].data<double>()[i], steps ? out[1].data<double>()[(steps - 1) * 3 + i] : feeds.at("s").data<double>()[i]);
  }
}

// docs/onnx.md lists every listed op with its ONNX form, or "—" for none.
TEST(OnnxForms, TheDocsTableSaysWhichOpsHaveAForm) {
  std::ifstream in(SYMFLOW_DOCS_DIR "/onnx.md");
  ASSERT_TRUE(in) << SYMFLOW_DOCS_DIR "/onnx.md";
  std::map<std::string, bool> table;  // op -> has a form
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::size_t end = line.find('`', 3);
    const std::size_t bar = line.find('|', end);
    table[line.substr(3, end - 3)] = line.find("\u2014", bar) == std::string::npos;
  }
  std::size_t listed = 0;
  for (const auto& f : op_list::op_files) {
    const std::string op(f.op);
    ++listed;
    const auto it = table.find(op);
    if (it == table.end()) {
      ADD_FAILURE() << "docs/onnx.md has no row for op '" << op << "'";
      continue;
    }
    EXPECT_EQ(it->second, find_onnx_form(op) != nullptr)
        << "docs/onnx.md says op '" << op << "' " << (it->second ? "has" : "has no") << " ONNX form";
  }
  std::apply([&](auto... flow) {
    auto check = [&](std::string_view op) {
      ++listed;
      const auto it = table.find(std::string(op));
      if (it == table.end()) return ADD_FAILURE() << "docs/onnx.md has no row for control-flow op '" << op << "'", void();
      EXPECT_EQ(it->second, find_onnx_flow_form(op) != nullptr)
          << "docs/onnx.md says op '" << op << "' " << (it->second ? "has" : "has no") << " ONNX form";
    };
    (check(flow.name), ...);
  }, control_flow::registered{});
  EXPECT_EQ(table.size(), listed) << "docs/onnx.md lists ops that are not in the op list";
}

}  // namespace
