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

  // The exported model imported again (runtime/onnx_import.hpp) gives the same outputs: bit for bit,
  // except where the ONNX form is a composition that reads back as other ops (rsqrt as 1 / sqrt,
  // log1p as log(1 + x), silu as x * sigmoid(x), gelu with erf, elu as a where over exp), which round
  // in their own way: there within 2^-21 relative plus 2^-22 absolute (log(1 + x) keeps the rounding
  // of 1 + x, an ulp of 1), the same infinities, NaNs where the original has them.
  static void expect_round_trip(const std::string& name, const onnx::ModelProto& model, const runtime_feeds& feeds,
                                const std::vector<runtime_tensor>& want) {
    static const std::set<std::string> recomposed{"rsqrt", "log1p", "silu", "gelu", "elu"};
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
      if (!recomposed.count(name)) {
        EXPECT_EQ(a.bytes, b.bytes) << name << " output " << k << " differs after export and import";
        continue;
      }
      ASSERT_EQ(a.type, dtype::f32) << name;
      for (std::size_t i = 0; i < a.element_count(); ++i) {
        float u, v;
        std::memcpy(&u, a.bytes.data() + 4 * i, 4);
        std::memcpy(&v, b.bytes.data() + 4 * i, 4);
        if (std::isnan(v)) {
          EXPECT_TRUE(std::isnan(u)) << name << " element " << i;
        } else if (u != v) {  // equal infinities pass here
          EXPECT_LE(std::abs(u - v), std::abs(v) * 0x1p-21f + 0x1p-22f) << name << " element " << i << ": " << u << " vs " << v;
        }
      }
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
  const auto where = placeholder<"where", std::int32_t, shape<dyn, 5>>();
  const graph g = to_graph(gather_elements<1>(x, where) + 1.0f, dropout(x, 0.5, std::uint64_t(7)));
  try {
    (void)to_onnx(g);
    ADD_FAILURE() << "expected onnx_error";
  } catch (const onnx_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("2 node(s) have no ONNX form"), std::string::npos) << what;
    EXPECT_NE(what.find("op 'gather_elements'"), std::string::npos) << what;
    EXPECT_NE(what.find("op 'dropout'"), std::string::npos) << what;
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
  EXPECT_EQ(table.size(), listed) << "docs/onnx.md lists ops that are not in the op list";
}

}  // namespace
