// ONNX import (runtime/onnx_import.hpp) beyond the node conformance tests (onnx_conformance_test)
// and the export round trips (onnx_export_test): an imported model fine-tunes, exporters' shape
// arithmetic is folded, every unreadable node is named in one error, and hostile files end in
// onnx_import_error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <symflow/runtime/grad.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/runtime/onnx_import.hpp>

namespace {
using namespace symflow;

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
std::vector<float> floats_of(const graph_tensor& t) {
  std::vector<float> v(t.element_count());
  if (!v.empty()) std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
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
  add_node(g, "Celu", {"x"}, {"w"}, "third");
  add_int(add_node(g, "Softmax", {"x"}, {"v"}, "fourth"), "unknown_attribute", 3);
  try {
    (void)from_onnx(model_with(g));
    FAIL() << "no error";
  } catch (const onnx_import_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("3 nodes cannot be imported"), std::string::npos) << what;
    EXPECT_NE(what.find("node 0 'first' (Atan)"), std::string::npos) << what;
    EXPECT_NE(what.find("node 2 'third' (Celu)"), std::string::npos) << what;
    EXPECT_NE(what.find("node 3 'fourth' (Softmax): attributes not supported: 'unknown_attribute'"), std::string::npos) << what;
    EXPECT_EQ(what.find("second"), std::string::npos) << what;
  }
}

TEST(OnnxImport, MalformedModelsEndInAnImportError) {
  const auto refused = [](onnx::ModelProto m, const std::string& why) {
    try {
      (void)from_onnx(m);
      ADD_FAILURE() << "accepted: " << why;
    } catch (const onnx_import_error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
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
  EXPECT_THROW((void)load_onnx("/nonexistent/model.onnx"), onnx_import_error);
  const std::string garbage = testing::TempDir() + "symflow_not_onnx.onnx";
  std::ofstream(garbage, std::ios::binary) << "\xff\xff\xff\xff not a protobuf";
  EXPECT_THROW((void)load_onnx(garbage), onnx_import_error);
}

TEST(OnnxImport, EachOnnxOpTypeIsReadInOnePlace) {
  const std::vector<std::string_view> by_ops = onnx_types_read_by_ops();
  std::set<std::string_view> seen;
  for (auto t : by_ops) EXPECT_TRUE(seen.insert(t).second) << t << " is read by two listed ops";
  for (const auto& [type, read] : onnx_compositions::table)
    EXPECT_EQ(find_onnx_reading(type), nullptr) << type << " is read by a listed op and by a composition";
}

}  // namespace
