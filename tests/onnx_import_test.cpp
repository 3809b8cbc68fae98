// ONNX import (runtime/onnx_import.hpp).
//
// The ONNX backend node tests that Debian's libonnx-testdata ships (data/node/*/model.onnx with
// test_data_set_0/input_*.pb and output_*.pb) run through the importer and the graph interpreter,
// outputs compared as ONNX's own backend runner compares them (numpy.testing.assert_allclose with
// rtol 1e-3, atol 1e-7, NaN equal to NaN; integers and bools exactly; dtype and extents equal). A
// test is claimed when every op type in its graph is one the importer reads and every input and
// output has a symflow dtype; at least 90% of the claimed tests must pass. Every test's result goes
// into a Markdown report (SYMFLOW_ONNX_CONFORMANCE_REPORT, default onnx_conformance.md here), from
// which docs/onnx.md's table is taken.
//
// Beyond them (the export round trips are onnx_export_test's): an imported model fine-tunes,
// exporters' shape arithmetic is folded, every unreadable node is named in one error, and hostile
// files end in onnx_import_error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/runtime/onnx_import.hpp>

namespace {
using namespace symflow;
namespace fs = std::filesystem;

const fs::path node_tests = "/usr/share/libonnx-testdata/data/node";

// A protobuf message (ModelProto, TensorProto) from a file of the test data.
template <class Proto>
Proto read_proto(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  Proto m;
  if (!m.ParseFromString(s.str())) throw std::runtime_error("cannot parse " + p.string());
  return m;
}
onnx::TensorProto read_tensor_file(const fs::path& p) { return read_proto<onnx::TensorProto>(p); }
onnx::ModelProto read_model(const fs::path& p) { return read_proto<onnx::ModelProto>(p); }

// The i-th element of a tensor as a double (integers exactly up to 2^53).
double element(const graph_tensor& t, std::size_t i) {
  double out = 0;
  visit_dtype(t.type, [&](auto zero) {
    using T = decltype(zero);
    T v;
    std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, bool>) out = v ? 1 : 0;
    else out = static_cast<double>(v);
  });
  return out;
}

// "" when `got` matches `want` as ONNX's runner compares, else what differs.
std::string compare(const graph_tensor& got, const graph_tensor& want) {
  if (got.type != want.type)
    return "dtype " + std::string(dtype_name(got.type)) + ", expected " + std::string(dtype_name(want.type));
  if (got.extents != want.extents) {
    std::string g, w;
    for (auto e : got.extents) g += std::to_string(e) + ",";
    for (auto e : want.extents) w += std::to_string(e) + ",";
    return "extents [" + g + "], expected [" + w + "]";
  }
  const bool floating = is_floating_dtype(want.type);
  for (std::size_t i = 0; i < want.element_count(); ++i) {
    const double a = element(got, i), b = element(want, i);
    if (floating) {
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;
      if (std::abs(a - b) <= 1e-7 + 1e-3 * std::abs(b)) continue;
    } else if (a == b) {
      continue;
    }
    std::ostringstream s;
    s << "element " << i << " is " << a << ", expected " << b;
    return s.str();
  }
  return "";
}

struct outcome {
  std::string test;
  std::set<std::string> ops;
  enum kind { passed, failed, unsupported } result = failed;
  std::string reason;
};

// The first thing that keeps a test out of the claimed set, or "".
std::string unclaimed_reason(const onnx::ModelProto& m, const std::set<std::string>& read) {
  bool default_domain = false;
  for (const auto& o : m.opset_import()) default_domain |= o.domain().empty() || o.domain() == "ai.onnx";
  if (!default_domain) return "domain " + (m.opset_import_size() ? m.opset_import(0).domain() : std::string("(none)"));
  for (const auto& n : m.graph().node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return "domain " + n.domain();
    if (!read.count(n.op_type())) return "op " + n.op_type();
  }
  const auto check = [](const onnx::ValueInfoProto& v) -> std::string {
    if (!v.type().has_tensor_type()) return "a non-tensor value";
    const std::int32_t code = v.type().tensor_type().elem_type();
    if (find_dtype(&dtype_info::onnx, code)) return "";
    return "dtype " + onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(code));
  };
  for (const auto& v : m.graph().input())
    if (auto why = check(v); !why.empty()) return why;
  for (const auto& v : m.graph().output())
    if (auto why = check(v); !why.empty()) return why;
  return "";
}

outcome run_test(const fs::path& dir, const std::set<std::string>& read) {
  outcome o;
  o.test = dir.filename().string();
  const onnx::ModelProto model = read_model(dir / "model.onnx");
  for (const auto& n : model.graph().node()) o.ops.insert(n.op_type());
  if (auto why = unclaimed_reason(model, read); !why.empty()) {
    o.result = outcome::unsupported;
    o.reason = why;
    return o;
  }
  std::set<std::string> initialisers;
  for (const auto& t : model.graph().initializer()) initialisers.insert(t.name());
  std::vector<std::string> input_names;
  for (const auto& v : model.graph().input())
    if (!initialisers.count(v.name())) input_names.push_back(v.name());
  try {
    const fs::path data = dir / "test_data_set_0";
    std::vector<graph_tensor> inputs;
    // ONNX 1.12's test data stores bfloat16 tensors as uint16 (their bits): read as what the model declares.
    const auto bf16_bits = [](graph_tensor t, const onnx::ValueInfoProto& declared) {
      if (t.type == dtype::u16 && declared.type().tensor_type().elem_type() == onnx::TensorProto::BFLOAT16) t.type = dtype::bf16;
      return t;
    };
    const auto declared_input = [&](const std::string& name) -> const onnx::ValueInfoProto& {
      for (const auto& v : model.graph().input())
        if (v.name() == name) return v;
      throw std::runtime_error("no input " + name);
    };
    for (std::size_t k = 0; k < input_names.size(); ++k)
      inputs.push_back(bf16_bits(from_onnx_tensor(read_tensor_file(data / ("input_" + std::to_string(k) + ".pb")), "input", 1u << 30),
                                 declared_input(input_names[k])));
    // Shape, axes, pads and fill values given as graph inputs: the importer needs their values, so
    // the model is imported again with each input it names as such an initialiser (frozen), as
    // exporters write them.
    onnx::ModelProto frozen = model;
    graph g;
    for (int attempt = 0;; ++attempt) {
      try {
        g = from_onnx(frozen);
        break;
      } catch (const onnx_import_error& e) {
        const std::string what = e.what();
        const std::size_t at = what.find("') must be a constant");
        if (at == std::string::npos || attempt == 8) throw;
        const std::string name = what.substr(what.rfind("('", at) + 2, at - what.rfind("('", at) - 2);
        auto* inputs_proto = frozen.mutable_graph()->mutable_input();
        const auto k = std::find(input_names.begin(), input_names.end(), name) - input_names.begin();
        if (std::size_t(k) == input_names.size()) throw;
        for (int i = 0; i < inputs_proto->size(); ++i)
          if (inputs_proto->Get(i).name() == name) inputs_proto->DeleteSubrange(i, 1);
        *frozen.mutable_graph()->add_initializer() = to_onnx_tensor(inputs[k], name);
        o.reason = "inputs frozen; ";
      }
    }
    runtime_feeds feeds;
    for (std::size_t k = 0; k < input_names.size(); ++k)
      for (const auto& leaf : g.inputs)
        if (leaf.name == input_names[k]) feeds.insert_or_assign(input_names[k], runtime_tensor(inputs[k]));
    const std::vector<runtime_tensor> outputs = run_graph(g, feeds);
    if (int(outputs.size()) != model.graph().output_size()) {
      o.reason += std::to_string(outputs.size()) + " outputs";
      return o;
    }
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const graph_tensor want = bf16_bits(from_onnx_tensor(read_tensor_file(data / ("output_" + std::to_string(k) + ".pb")), "output", 1u << 30),
                                          model.graph().output(int(k)));
      if (auto diff = compare(outputs[k].to_graph_tensor(), want); !diff.empty()) {
        o.reason += "output " + std::to_string(k) + ": " + diff;
        return o;
      }
    }
    o.result = outcome::passed;
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    o.reason += what.substr(0, 300);
  }
  return o;
}

std::string escape(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

TEST(OnnxConformance, NodeTestsOfClaimedOpsPass) {
  if (!fs::exists(node_tests)) GTEST_SKIP() << "libonnx-testdata is not installed (" << node_tests << ")";
  std::set<std::string> read;
  for (std::string_view t : onnx_types_imported()) read.insert(std::string(t));
  std::vector<fs::path> dirs;
  for (const auto& d : fs::directory_iterator(node_tests))
    if (fs::exists(d.path() / "model.onnx")) dirs.push_back(d.path());
  std::sort(dirs.begin(), dirs.end());
  ASSERT_GT(dirs.size(), 500u);

  std::vector<outcome> outcomes;
  for (const auto& d : dirs) outcomes.push_back(run_test(d, read));

  std::size_t passed = 0, failed = 0, unsupported = 0;
  std::map<std::string, std::array<int, 3>> per_op;
  std::map<std::string, int> unsupported_by_reason;
  for (const auto& o : outcomes) {
    (o.result == outcome::passed ? passed : o.result == outcome::failed ? failed : unsupported)++;
    for (const auto& op : o.ops) per_op[op][int(o.result)]++;
    if (o.result == outcome::unsupported) unsupported_by_reason[o.reason]++;
  }
  const std::size_t claimed = passed + failed;
  std::ofstream report(std::getenv("SYMFLOW_ONNX_CONFORMANCE_REPORT") ? std::getenv("SYMFLOW_ONNX_CONFORMANCE_REPORT")
                                                                       : "onnx_conformance.md");
  report << "Of " << outcomes.size() << " node tests, " << claimed << " are claimed (their op types and dtypes are "
         << "read): " << passed << " pass, " << failed << " fail; " << unsupported << " are not claimed.\n\n";
  report << "| ONNX op | passed | failed | not claimed |\n|---|---|---|---|\n";
  for (const auto& [op, n] : per_op)
    if (read.count(op)) report << "| " << op << " | " << n[0] << " | " << n[1] << " | " << n[2] << " |\n";
  report << "\nFailures (claimed tests):\n\n| test | reason |\n|---|---|\n";
  for (const auto& o : outcomes)
    if (o.result == outcome::failed) report << "| " << o.test << " | " << escape(o.reason) << " |\n";
  report << "\nNot claimed, by first reason:\n\n";
  for (const auto& [why, n] : unsupported_by_reason) report << "- " << why << ": " << n << "\n";
  report << "\nPassed with shape, axes or fill inputs frozen as constants:";
  for (const auto& o : outcomes)
    if (o.result == outcome::passed && !o.reason.empty()) report << " " << o.test;
  report << "\n";

  std::cout << passed << " of " << claimed << " claimed node tests pass (" << failed << " fail, " << unsupported
            << " not claimed)\n";
  for (const auto& o : outcomes)
    if (o.result == outcome::failed) std::cout << "  " << o.test << ": " << o.reason << "\n";
  EXPECT_GE(double(passed), 0.9 * double(claimed));
  EXPECT_GT(claimed, 400u);
}


onnx::TensorProto float_tensor(const std::string& name, std::vector<std::int64_t> dims, std::vector<float> values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}
onnx::TensorProto int64_tensor(const std::string& name, std::vector<std::int64_t> dims, std::vector<std::int64_t> values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (auto d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(std::int64_t)));
  return t;
}
void add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
               std::vector<std::int64_t> dims, int type = onnx::TensorProto::FLOAT) {
  auto* v = list->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  for (auto d : dims) {
    auto* dim = t->mutable_shape()->add_dim();
    if (d < 0) dim->set_dim_param("batch");
    else dim->set_dim_value(d);
  }
}
onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op, std::vector<std::string> in, std::vector<std::string> out,
                          const std::string& name = "") {
  onnx::NodeProto& n = *g.add_node();
  n.set_op_type(op);
  n.set_name(name);
  for (auto& i : in) n.add_input(i);
  for (auto& o : out) n.add_output(o);
  return n;
}
void add_int(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
onnx::ModelProto model_with(onnx::GraphProto g, std::int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  *m.mutable_graph() = std::move(g);
  return m;
}
std::vector<float> random_floats(std::size_t n, unsigned seed, float scale = 0.5f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}
// The message of the onnx_import_error that importing m ends in; a test failure and "" if it imports.
std::string import_refusal(const onnx::ModelProto& m) {
  try {
    (void)from_onnx(m);
  } catch (const onnx_import_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the model was imported";
  return "";
}

// y = Gemm(Relu(Gemm(x, W1, b1)), W2, b2): four initialisers, which import as parameters.
onnx::ModelProto small_mlp() {
  onnx::GraphProto g;
  g.set_name("mlp");
  add_value(g.mutable_input(), "x", {-1, 3});
  add_value(g.mutable_output(), "y", {-1, 1});
  *g.add_initializer() = float_tensor("W1", {3, 8}, random_floats(24, 1));
  *g.add_initializer() = float_tensor("b1", {8}, random_floats(8, 2));
  *g.add_initializer() = float_tensor("W2", {8, 1}, random_floats(8, 3));
  *g.add_initializer() = float_tensor("b2", {1}, {0.f});
  add_node(g, "Gemm", {"x", "W1", "b1"}, {"h"}, "dense1");
  add_node(g, "Relu", {"h"}, {"a"}, "act");
  add_node(g, "Gemm", {"a", "W2", "b2"}, {"y"}, "dense2");
  return model_with(g);
}

TEST(OnnxImport, AnImportedModelFineTunesAndItsLossFalls) {
  const graph model = from_onnx(small_mlp());
  ASSERT_EQ(model.inputs.size(), 1u);
  ASSERT_EQ(model.parameters.size(), 4u);
  for (const auto& p : model.parameters) EXPECT_TRUE(p.value.has_value()) << p.name;

  // The loss, mean((y - t)^2), built onto the imported graph; its gradient by the runtime rules.
  graph_builder b(model);
  const graph_handle t = b.input("t", dtype::f32, {unknown_extent, 1});
  const graph_handle err = b.handle(b.outputs().at(0).id) - t;
  const graph_handle loss = reduce_value(ops::mean_op{}, err * err, {}, false);
  graph step = differentiate(b.build({loss}), {"W1", "b1", "W2", "b2"});

  // A target the model can fit: t = sum(x) / 2 on 32 points.
  const std::size_t n = 32;
  const std::vector<float> xs = random_floats(3 * n, 7, 1.f);
  std::vector<float> ts(n);
  for (std::size_t i = 0; i < n; ++i) ts[i] = (xs[3 * i] + xs[3 * i + 1] + xs[3 * i + 2]) / 2;
  runtime_tensor x(dtype::f32, {n, 3}), target(dtype::f32, {n, 1});
  std::memcpy(x.data<float>(), xs.data(), xs.size() * 4);
  std::memcpy(target.data<float>(), ts.data(), ts.size() * 4);
  const runtime_feeds feeds{{"x", x}, {"t", target}};

  float first = 0, last = 0;
  for (int s = 0; s < 200; ++s) {
    const auto out = run_graph(step, feeds);
    last = out[0].data<float>()[0];
    if (s == 0) first = last;
    for (std::size_t k = 0; k < 4; ++k) {  // SGD on the embedded values, gradient k + 1 for parameter k
      graph_leaf& p = *std::find_if(step.parameters.begin(), step.parameters.end(),
                                    [&](const graph_leaf& l) { return l.name == std::vector<std::string>{"W1", "b1", "W2", "b2"}[k]; });
      float* v = reinterpret_cast<float*>(p.value->bytes.data());
      const float* g = out[k + 1].data<float>();
      for (std::size_t i = 0; i < out[k + 1].size(); ++i) v[i] -= 0.1f * g[i];
    }
  }
  EXPECT_TRUE(std::isfinite(last));
  EXPECT_LT(last, 0.2f * first) << "loss " << first << " -> " << last;
}

TEST(OnnxImport, ShapeArithmeticAsExportersWriteItIsFolded) {
  // Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): x [2, 3, 4] as [2, 12].
  onnx::GraphProto g;
  add_value(g.mutable_input(), "x", {2, 3, 4});
  add_value(g.mutable_output(), "y", {2, 12});
  *g.add_initializer() = int64_tensor("zero", {}, {0});
  *g.add_initializer() = int64_tensor("axes", {1}, {0});
  *g.add_initializer() = int64_tensor("rest", {1}, {-1});
  add_node(g, "Shape", {"x"}, {"s"});
  add_node(g, "Gather", {"s", "zero"}, {"n"});
  add_node(g, "Unsqueeze", {"n", "axes"}, {"n1"});
  add_node(g, "Concat", {"n1", "rest"}, {"target"}).add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  add_node(g, "Reshape", {"x", "target"}, {"y"});
  const graph imported = from_onnx(model_with(g));
  runtime_tensor x(dtype::f32, {2, 3, 4});
  for (std::size_t i = 0; i < 24; ++i) x.data<float>()[i] = float(i) - 11.5f;
  const auto out = run_graph(imported, {{"x", x}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].extents(), (runtime_extents{2, 12}));
  for (std::size_t i = 0; i < 24; ++i) EXPECT_EQ(out[0].data<float>()[i], float(i) - 11.5f);
  // The shape arithmetic left no node behind: a reshape (and what leads to it) only.
  for (const auto& n : imported.nodes) EXPECT_NE(n.op, "concat") << "the shape's Concat was not folded";
}

TEST(OnnxImport, EveryUnreadableNodeIsNamedInOneError) {
  onnx::GraphProto g;
  add_value(g.mutable_input(), "x", {2});
  add_value(g.mutable_output(), "z", {2});
  add_value(g.mutable_output(), "w", {2});
  add_value(g.mutable_output(), "v", {2});
  add_node(g, "Atan", {"x"}, {"y"}, "first");
  add_node(g, "Relu", {"y"}, {"z"}, "second");  // reads a refused node: not named again
  add_node(g, "Acos", {"x"}, {"w"}, "third");
  add_int(add_node(g, "Softmax", {"x"}, {"v"}, "fourth"), "unknown_attribute", 3);
  {
    const std::string what = import_refusal(model_with(g));
    EXPECT_NE(what.find("3 nodes cannot be imported"), std::string::npos) << what;
    EXPECT_NE(what.find("node 0 'first' (Atan)"), std::string::npos) << what;
    EXPECT_NE(what.find("node 2 'third' (Acos)"), std::string::npos) << what;
    EXPECT_NE(what.find("node 3 'fourth' (Softmax): attributes not supported: 'unknown_attribute'"), std::string::npos) << what;
    EXPECT_EQ(what.find("second"), std::string::npos) << what;
  }
}

TEST(OnnxImport, MalformedModelsEndInAnImportError) {
  const auto refused = [](const onnx::ModelProto& m, const std::string& why) {
    const std::string what = import_refusal(m);
    EXPECT_NE(what.find(why), std::string::npos) << "expected a refusal naming '" << why << "', got: " << what;
  };
  const onnx::ModelProto good = small_mlp();
  EXPECT_NO_THROW((void)from_onnx(good));
  {
    auto m = good;
    m.mutable_graph()->mutable_initializer(0)->add_float_data(1.f);
    refused(m, "float_data holds 25 values for 24 elements");
  }
  {
    auto m = good;
    m.mutable_graph()->mutable_initializer(0)->set_dims(0, -3);
    refused(m, "negative extent -3");
  }
  {
    auto m = good;
    auto* t = m.mutable_graph()->mutable_initializer(0);
    t->set_dims(0, std::int64_t(1) << 40);
    t->set_dims(1, std::int64_t(1) << 40);
    refused(m, "elements");
  }
  {
    auto m = good;
    auto* t = m.mutable_graph()->mutable_initializer(1);
    t->clear_float_data();
    t->set_raw_data(std::string(31, '\0'));
    refused(m, "raw_data holds 31 bytes");
  }
  {
    auto m = good;
    m.mutable_graph()->mutable_initializer(1)->set_data_location(onnx::TensorProto::EXTERNAL);
    refused(m, "external files");
  }
  {
    auto m = good;
    m.mutable_graph()->mutable_initializer(1)->set_data_type(8);  // STRING
    refused(m, "STRING");
  }
  {
    auto m = good;
    m.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
    refused(m, "input 'nowhere' is not defined before it");
  }
  {
    auto m = good;
    m.mutable_graph()->mutable_node(2)->set_output(0, "h");
    refused(m, "is defined twice");
  }
  {
    auto m = good;
    m.mutable_opset_import(0)->set_version(99);
    refused(m, "opset 99");
  }
  {
    auto m = good;
    m.mutable_opset_import(0)->set_domain("com.example");
    refused(m, "no version of the default ONNX domain");
  }
  {
    auto m = good;
    m.mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
    refused(m, "domain 'com.microsoft'");
  }
  {
    auto m = good;
    m.mutable_graph()->mutable_node(0)->add_output("extra");
    refused(m, "output 1 ('extra') is not supported");
  }
  {
    auto m = good;
    onnx_import_limits small;
    small.max_nodes = 2;
    EXPECT_THROW((void)from_onnx(m, small), onnx_import_error);
  }
  {  // Gemm on a vector: the op's own rule refuses it, naming the node.
    auto m = good;
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()->RemoveLast();
    refused(m, "node 0 'dense1' (Gemm)");
  }
  EXPECT_THROW((void)load_onnx("/nonexistent/model.onnx"), file_error);
  EXPECT_THROW((void)load_onnx(testing::TempDir()), file_error);  // a directory
  const std::string garbage = testing::TempDir() + "symflow_not_onnx.onnx";
  std::ofstream(garbage, std::ios::binary) << "\xff\xff\xff\xff not a protobuf";
  EXPECT_THROW((void)load_onnx(garbage), onnx_import_error);
}

// y = f(x) through a model-local function in symflow's domain, as the exporter writes compositions.
onnx::ModelProto function_call(const std::string& function, const std::string& called) {
  onnx::GraphProto g;
  add_value(g.mutable_input(), "x", {-1, 3});
  add_value(g.mutable_output(), "y", {-1, 3});
  add_node(g, called, {"x"}, {"y"}, "call").set_domain("symflow");
  onnx::ModelProto m = model_with(g);
  auto* o = m.add_opset_import();
  o->set_domain("symflow");
  o->set_version(1);
  onnx::FunctionProto& f = *m.add_functions();
  f.set_name(function);
  f.set_domain("symflow");
  f.add_input("x0");
  f.add_output("y");
  *f.add_node() = onnx::NodeProto();
  f.mutable_node(0)->set_op_type("Sqrt");
  f.mutable_node(0)->add_input("x0");
  f.mutable_node(0)->add_output("t0");
  *f.add_node() = onnx::NodeProto();
  f.mutable_node(1)->set_op_type("Reciprocal");
  f.mutable_node(1)->add_input("t0");
  f.mutable_node(1)->add_output("y");
  return m;
}

TEST(OnnxImport, AFunctionCallInSymflowsDomainIsReadAsTheOp) {
  for (const std::string name : {"rsqrt", "rsqrt__2"}) {  // the body is for other runtimes
    const graph g = from_onnx(function_call(name, name));
    ASSERT_EQ(g.nodes.size(), 1u) << name;
    EXPECT_EQ(g.nodes[0].op, "rsqrt") << name;
    EXPECT_EQ(g.nodes[0].name, "call/rsqrt") << name;
  }
  const auto refused = [](const onnx::ModelProto& m, const std::string& why) {
    const std::string what = import_refusal(m);
    EXPECT_NE(what.find(why), std::string::npos) << "expected a refusal naming '" << why << "', got: " << what;
  };
  refused(function_call("rsqrt", "gelu"), "node 0 'call' (symflow.gelu): the model has no function 'gelu'");
  refused(function_call("not_an_op", "not_an_op"), "'not_an_op' is not a symflow op with an ONNX form");
  refused(function_call("rsqrt__x", "rsqrt__x"), "'rsqrt__x' is not a symflow op");
  refused(function_call("scan", "scan"), "'scan' is not a symflow op");  // control flow needs its bodies
  {
    auto m = function_call("rsqrt", "rsqrt");
    add_int(*m.mutable_graph()->mutable_node(0), "alpha", 1);
    refused(m, "attributes not supported: 'alpha'");
  }
  {
    auto m = function_call("add", "add");  // two operands, the call gives one: the op's rule says so
    refused(m, "node 0 'call' (symflow.add)");
  }
  {
    auto m = function_call("rsqrt", "rsqrt");
    m.mutable_functions(0)->set_domain("com.example");  // a function of another domain is not symflow's
    refused(m, "the model has no function 'rsqrt' in the domain 'symflow'");
  }
}

TEST(OnnxImport, EachOnnxOpTypeIsReadInOnePlace) {
  const std::vector<std::string_view> by_ops = onnx_types_read_by_ops();
  std::set<std::string_view> seen;
  for (auto t : by_ops) EXPECT_TRUE(seen.insert(t).second) << t << " is read by two listed ops";
  for (const auto& [type, read] : onnx_compositions::table)
    EXPECT_EQ(find_onnx_reading(type), nullptr) << type << " is read by a listed op and by a composition";
}

}  // namespace
