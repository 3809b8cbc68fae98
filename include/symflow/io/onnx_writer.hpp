#pragma once
// The ONNX exporter's writer (io/onnx.hpp): the ONNX nodes of one graph, or of a control-flow
// node's body, written one symflow node at a time by each op's form (expr/onnx_form.hpp,
// ir/control_flow/onnx_flow.hpp), with names unique in the whole model.
//
// A form of several ONNX nodes for a node without attributes (gelu: Mul, Erf, Add, Mul) is written
// as a model-local ONNX function in the domain "symflow", named after the op, whose body is the
// composition: runtimes inline it, and symflow's importer reads the call back as the op itself,
// so the round trip keeps the op's own rounding. Nodes of one op whose compositions differ (a
// constant of another dtype) call functions "op", "op__2", ...
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "../core/error.hpp"
#include "../ir/graph.hpp"
#include "../ir/node_attributes.hpp"
#include "../ir/onnx_forms.hpp"
#include "onnx_tensor.hpp"

namespace symflow {

// A graph has no ONNX form (the message names each op and node), or the file cannot be written.
class onnx_error : public error {
 public:
  using error::error;
};

namespace onnx_detail {

inline void set_type(onnx::ValueInfoProto& info, const graph_type& t, const std::string& dim_prefix) {
  auto* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(dtype_info_of(t.type).onnx);
  auto* shape = tensor->mutable_shape();
  for (std::size_t a = 0; a < t.shape.size(); ++a) {
    auto* dim = shape->add_dim();
    if (t.shape[a] == unknown_extent) dim->set_dim_param(dim_prefix + "_dim" + std::to_string(a));
    else dim->set_dim_value(t.shape[a]);
  }
}

// What the writers of a model's graph and bodies share: the names used in the whole model (a
// body's names must not repeat the enclosing graph's) and its functions.
struct model_names {
  onnx::ModelProto& model;
  std::set<std::string> used;
  std::map<std::string, std::string> functions;  // a function's serialised body -> its name
  std::set<std::string> function_names;
};

// Writes the ONNX nodes of the graph's nodes, one symflow node at a time.
class model_writer final : public onnx_flow_writer {
 public:
  model_writer(const graph& g, onnx::GraphProto& out, model_names& model)
      : g_(g), out_(out), model_(model), used_(model.used) {}

  // The ONNX name of value `id`, unique in the model.
  std::string claim_name(std::string wanted) {
    if (wanted.empty()) wanted = "value";
    std::string name = wanted;
    for (int k = 1; !used_.insert(name).second; ++k) name = wanted + "_" + std::to_string(k);
    return name;
  }
  void name_value(std::uint32_t id, std::string wanted) { set_name(id, claim_name(std::move(wanted))); }
  // Value `id` is the enclosing graph's value of this name (a body reading it from outer scope).
  void set_name(std::uint32_t id, std::string name) {
    if (names_.size() <= id) names_.resize(id + 1);
    names_[id] = std::move(name);
  }
  onnx::GraphProto& proto() { return out_; }
  const graph& source() const { return g_; }
  const std::string& name_of(std::uint32_t id) const { return names_.at(id); }

  void begin(const graph_node& node, std::uint32_t id) {
    node_ = &node;
    id_ = id;
    wrote_result_ = false;
  }
  bool wrote_result() const { return wrote_result_; }

  // While a form is captured, its nodes go to a function's body (capture), with local names.
  void begin_capture(onnx::FunctionProto& f) {
    capture_ = &f;
    capture_operands_.clear();
    for (std::size_t i = 0; i < node_->inputs.size(); ++i) capture_operands_.push_back("x" + std::to_string(i));
    capture_names_ = 0;
    wrote_result_ = false;
  }
  void end_capture() { capture_ = nullptr; }
  // The captured form as a call of a function (reused when an earlier node's composition was the same).
  void call_function(onnx::FunctionProto f);

  std::size_t operand_count() const override { return node_->inputs.size(); }
  const std::string& operand(std::size_t i) const override {
    return capture_ ? capture_operands_.at(i) : name_of(node_->inputs.at(i));
  }
  dtype operand_dtype(std::size_t i) const override { return g_.type_of(node_->inputs.at(i)).type; }
  std::vector<std::int64_t> operand_extents(std::size_t i) const override {
    return g_.type_of(node_->inputs.at(i)).shape;
  }
  dtype result_dtype() const override { return node_->type.type; }
  std::vector<std::int64_t> result_extents() const override { return node_->type.shape; }

  // Attributes as the interpreter reads them (a missing or mistyped one is a graph_error naming the node).
  std::int64_t integer(std::string_view key) const override { return attributes().integer(key); }
  std::vector<std::int64_t> integers(std::string_view key) const override { return attributes().integers(key); }
  bool boolean(std::string_view key) const override { return attributes().boolean(key); }
  double number(std::string_view key) const override { return attributes().number(key); }
  dtype dtype_of(std::string_view key) const override { return attributes().dtype_of(key); }
  bool has(std::string_view key) const override { return attributes().has(key); }

  std::string add(std::string_view op_type, std::vector<std::string> inputs, std::vector<onnx_attribute> attributes,
                  bool result) override {
    if (capture_) {
      onnx::NodeProto& n = *capture_->add_node();
      n.set_op_type(std::string(op_type));
      for (auto& in : inputs) n.add_input(std::move(in));
      n.add_output(result ? "y" : "t" + std::to_string(capture_names_++));
      for (const onnx_attribute& a : attributes) add_attribute(n, a);
      if (result) wrote_result_ = true;
      return n.output(0);
    }
    onnx::NodeProto& n = *out_.add_node();
    n.set_op_type(std::string(op_type));
    const std::string& base = name_of(id_);
    // A helper node's output, and the node itself, are named after the node it helps ("dense1/gelu/Erf").
    const std::string output = result ? base : claim_name(base + "/" + std::string(op_type));
    n.set_name(output);
    for (auto& in : inputs) n.add_input(std::move(in));
    n.add_output(output);
    if (node_->where.line) n.set_doc_string(node_->where.file + ":" + std::to_string(node_->where.line));
    for (const onnx_attribute& a : attributes) add_attribute(n, a);
    if (result) wrote_result_ = true;
    return output;
  }

  std::string int64s(const std::vector<std::int64_t>& values) override {
    if (capture_)
      return captured_constant([&](onnx::TensorProto& t) {
        set_tensor(t, "", dtype::i64, {std::int64_t(values.size())}, values.data(), values.size() * sizeof(std::int64_t));
      });
    const std::string name = claim_name(name_of(id_) + "/constant");
    set_tensor(*out_.add_initializer(), name, dtype::i64, {std::int64_t(values.size())}, values.data(),
               values.size() * sizeof(std::int64_t));
    return name;
  }
  std::string scalar(dtype t, double value) override {
    if (capture_) return captured_constant([&](onnx::TensorProto& out) { set_scalar(out, "", t, value); });
    const std::string name = claim_name(name_of(id_) + "/constant");
    add_scalar(name, t, value);
    return name;
  }
  void add_scalar(const std::string& name, dtype t, double value) { set_scalar(*out_.add_initializer(), name, t, value); }

  const graph& body(std::string_view key) const override { return control_flow::body_of(*node_, key); }
  std::vector<std::string> add_with_bodies(std::string_view op_type, std::vector<std::string> inputs,
                                           std::vector<onnx_attribute> attributes,
                                           const std::vector<onnx_body_binding>& bodies, const std::vector<bool>& named,
                                           std::size_t result) override;

  [[noreturn]] void refuse(const std::string& why) const override {
    throw onnx_error("node '" + node_->name + "' (" + node_->op + "): " + why);
  }

 private:
  static void add_attribute(onnx::NodeProto& n, const onnx_attribute& a) {
    onnx::AttributeProto& out = *n.add_attribute();
    out.set_name(a.name);
    if (const auto* i = std::get_if<std::int64_t>(&a.value)) {
      out.set_type(onnx::AttributeProto::INT);
      out.set_i(*i);
    } else if (const auto* f = std::get_if<float>(&a.value)) {
      out.set_type(onnx::AttributeProto::FLOAT);
      out.set_f(*f);
    } else if (const auto* s = std::get_if<std::string>(&a.value)) {
      out.set_type(onnx::AttributeProto::STRING);
      out.set_s(*s);
    } else {
      out.set_type(onnx::AttributeProto::INTS);
      for (std::int64_t v : std::get<std::vector<std::int64_t>>(a.value)) out.add_ints(v);
    }
  }
  node_attributes attributes() const { return node_attributes(*node_); }
  static void set_scalar(onnx::TensorProto& out, const std::string& name, dtype t, double value) {
    unsigned char bytes[8] = {};
    visit_compute_dtype(t, [&](auto zero) {  // literals and constants of a form: compute dtypes
      const decltype(zero) v = static_cast<decltype(zero)>(value);
      std::memcpy(bytes, &v, sizeof v);
    });
    set_tensor(out, name, t, {}, bytes, dtype_size(t));
  }
  // A constant inside a function's body: a Constant node (a function has no initialisers).
  template <class Fill>
  std::string captured_constant(Fill fill) {
    onnx::NodeProto& n = *capture_->add_node();
    n.set_op_type("Constant");
    n.add_output("c" + std::to_string(capture_names_++));
    onnx::AttributeProto& a = *n.add_attribute();
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    fill(*a.mutable_t());
    return n.output(0);
  }

  const graph& g_;
  onnx::GraphProto& out_;
  model_names& model_;
  std::set<std::string>& used_;
  onnx::FunctionProto* capture_ = nullptr;
  std::vector<std::string> capture_operands_;
  std::size_t capture_names_ = 0;
  std::vector<std::string> names_;
  const graph_node* node_ = nullptr;
  std::uint32_t id_ = 0;
  bool wrote_result_ = false;
};


// Writes a node's form as a function call when it is a composition (several nodes other than
// Constants) and the node has no attributes (the call carries none); false when it is not.
inline bool write_as_function(model_writer& w, const graph_node& node, onnx_form form) {
  if (!node.attributes.empty()) return false;
  onnx::FunctionProto f;
  w.begin_capture(f);
  try {
    form(w);
  } catch (const error&) {  // written again outside the capture, which reports the refusal
    w.end_capture();
    return false;
  }
  w.end_capture();
  int computing = 0;
  for (const auto& n : f.node()) computing += n.op_type() != "Constant";
  if (computing < 2 || !w.wrote_result()) return false;
  w.call_function(std::move(f));
  return true;
}

// Writes the ONNX nodes of g's nodes (w has named g's leaves and constants); every node that has
// no form, or whose form refuses it, is added to `problems`.
inline void write_nodes(model_writer& w, const graph& g, std::vector<std::string>& problems) {
  std::uint32_t id = g.first_node_id();
  for (const graph_node& node : g.nodes) {
    w.name_value(id, node.name.empty() ? node.op : node.name);
    w.begin(node, id);
    ++id;
    if (node.is_literal()) {
      w.add_scalar(w.name_of(id - 1), node.type.type, node_attributes(node).number("value"));
      continue;
    }
    const onnx_form form = find_onnx_form(node.op);
    const onnx_flow_form flow = form ? nullptr : find_onnx_flow_form(node.op);
    if (!form && !flow) {
      problems.push_back("node '" + node.name + "': op '" + node.op + "' has no ONNX form");
      continue;
    }
    try {
      if (form && write_as_function(w, node, form)) continue;
      w.begin(node, id - 1);
      if (form) form(w);
      else flow(w);
      if (!w.wrote_result()) problems.push_back("node '" + node.name + "': the ONNX form of '" + node.op + "' wrote no result");
    } catch (const error& e) {  // onnx_error from a form's refusal, graph_error from a bad attribute
      problems.push_back(e.what());
    }
  }
}

// g's values `outputs` as the outputs of w's ONNX graph: a value listed twice, or a leaf, constant
// or literal, goes out through an Identity (ONNX's outputs are node outputs, each named once).
inline void write_outputs(model_writer& w, const graph& g, const std::vector<std::uint32_t>& outputs) {
  onnx::GraphProto& out = w.proto();
  std::set<std::string> output_names;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const std::uint32_t v = outputs[k];
    std::string name = w.name_of(v);
    if (v < g.first_node_id() || !output_names.insert(name).second || g.nodes[v - g.first_node_id()].is_literal()) {
      const std::string copy = w.claim_name("output_" + std::to_string(k));
      onnx::NodeProto& n = *out.add_node();
      n.set_op_type("Identity");
      n.set_name(copy);
      n.add_input(name);
      n.add_output(copy);
      name = copy;
      output_names.insert(name);
    }
    auto& info = *out.add_output();
    info.set_name(name);
    set_type(info, g.type_of(v), name);
  }
}

// A control-flow node: its ONNX node, and each sub-graph as an ONNX body. A body's inputs bound
// to outer values take those names; the others are the body's declared inputs. Its constants are
// the body's initialisers.
inline std::vector<std::string> model_writer::add_with_bodies(std::string_view op_type, std::vector<std::string> inputs,
                                                              std::vector<onnx_attribute> attributes,
                                                              const std::vector<onnx_body_binding>& bodies,
                                                              const std::vector<bool>& named, std::size_t result) {
  onnx::NodeProto& n = *out_.add_node();
  n.set_op_type(std::string(op_type));
  const std::string base = name_of(id_);
  n.set_name(base);
  for (auto& in : inputs) n.add_input(std::move(in));
  std::vector<std::string> outputs;
  for (std::size_t k = 0; k < named.size(); ++k) {
    outputs.push_back(k == result ? base : named[k] ? claim_name(base + "/output" + std::to_string(k)) : std::string());
    n.add_output(outputs.back());
  }
  if (node_->where.line) n.set_doc_string(node_->where.file + ":" + std::to_string(node_->where.line));
  for (const onnx_attribute& a : attributes) add_attribute(n, a);

  const graph_node& node = *node_;
  std::vector<std::string> problems;
  for (const onnx_body_binding& b : bodies) {
    const graph& g = control_flow::body_of(node, b.key);
    if (b.outer.size() != g.inputs.size())
      throw onnx_error("node '" + node.name + "' (" + node.op + "): its form binds " + std::to_string(b.outer.size()) +
                       " of the " + std::to_string(g.inputs.size()) + " inputs of its " + b.key);
    onnx::AttributeProto& a = *n.add_attribute();
    a.set_name(b.attribute);
    a.set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto& proto = *a.mutable_g();
    proto.set_name(base + "/" + b.key);
    model_writer inner(g, proto, model_);
    for (std::uint32_t k = 0; k < g.inputs.size(); ++k) {
      if (b.outer[k]) {
        inner.set_name(k, *b.outer[k]);
        continue;
      }
      inner.name_value(k, base + "/" + g.inputs[k].name);
      auto& info = *proto.add_input();
      info.set_name(inner.name_of(k));
      set_type(info, g.inputs[k].type, inner.name_of(k));
    }
    std::uint32_t k = std::uint32_t(g.inputs.size() + g.parameters.size());
    for (const graph_constant& c : g.constants) {
      inner.name_value(k, base + "/" + c.name);
      set_tensor(*proto.add_initializer(), inner.name_of(k++), c.data.type, c.data.extents, c.data.bytes.data(),
                 c.data.bytes.size());
    }
    write_nodes(inner, g, problems);
    std::vector<std::uint32_t> body_outputs;
    for (std::size_t o : b.outputs) body_outputs.push_back(g.outputs.at(o));
    write_outputs(inner, g, body_outputs);
  }
  wrote_result_ = true;
  if (!problems.empty()) {
    std::string message = "node '" + node.name + "' (" + node.op + "): its sub-graphs have no ONNX form:";
    for (const std::string& p : problems) message += "\n    " + p;
    throw onnx_error(message);
  }
  return outputs;
}

inline void model_writer::call_function(onnx::FunctionProto f) {
  for (std::size_t i = 0; i < capture_operands_.size(); ++i) f.add_input(capture_operands_[i]);
  f.add_output("y");
  f.set_domain(std::string(onnx_function_domain));
  auto* opset = f.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  const std::string key = f.SerializeAsString();  // before it is named: same body, same function
  auto found = model_.functions.find(key);
  if (found == model_.functions.end()) {
    std::string name = node_->op;
    for (int k = 2; model_.function_names.count(name); ++k) name = node_->op + "__" + std::to_string(k);
    model_.function_names.insert(name);
    f.set_name(name);
    f.set_doc_string("symflow's " + node_->op + " (symflow reads a call of it back as the op)");
    *model_.model.add_functions() = std::move(f);
    found = model_.functions.emplace(key, name).first;
  }
  onnx::NodeProto& n = *out_.add_node();
  n.set_op_type(found->second);
  n.set_domain(std::string(onnx_function_domain));
  n.set_name(name_of(id_));
  for (std::uint32_t in : node_->inputs) n.add_input(name_of(in));
  n.add_output(name_of(id_));
  if (node_->where.line) n.set_doc_string(node_->where.file + ":" + std::to_string(node_->where.line));
  wrote_result_ = true;
}

}  // namespace onnx_detail
}  // namespace symflow
