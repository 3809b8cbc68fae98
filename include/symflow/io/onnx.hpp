#pragma once
// Export of a graph value to ONNX (opset 17): to_onnx(graph) gives the model as libonnx's
// ModelProto, save_onnx writes it. Needs Debian's libonnx-dev (CMake: find_package(ONNX), target
// onnx_proto, which defines ONNX_ML and ONNX_NAMESPACE); the rest of symflow does not.
//
//   - every node becomes the ONNX nodes its op's form writes (the op's own file, expr/onnx_form.hpp);
//     an op without one, or attribute values its form cannot express, is an onnx_error naming the op
//     and the node, and every such node is listed, not only the first;
//   - inputs (placeholders) are graph inputs, unknown extents symbolic dimensions ("x_dim0");
//   - parameters are initialisers holding the values of the given store (a checkpoint: see
//     train/checkpoint.hpp) or embedded in the graph, else graph inputs; constants are initialisers;
//   - node names are the scoped names ("dense1/matmul"), and each node's doc_string says where
//     the model code built it.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "../core/error.hpp"
#include "../core/params.hpp"
#include "../ir/graph.hpp"
#include "../ir/node_attributes.hpp"
#include "../ir/onnx_forms.hpp"
#include "files.hpp"
#include "onnx_tensor.hpp"

namespace symflow {

// A graph has no ONNX form (the message names each op and node), or the file cannot be written.
class onnx_error : public error {
 public:
  using error::error;
};

struct onnx_export_options {
  std::string graph_name = "symflow";
  std::string producer = "symflow";
};

inline constexpr std::int64_t onnx_opset = 17;

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

// Writes the ONNX nodes of the graph's nodes, one symflow node at a time.
class model_writer final : public onnx_node_writer {
 public:
  model_writer(const graph& g, onnx::GraphProto& out) : g_(g), out_(out) {}

  // The ONNX name of value `id`, unique in the model.
  std::string claim_name(std::string wanted) {
    if (wanted.empty()) wanted = "value";
    std::string name = wanted;
    for (int k = 1; !used_.insert(name).second; ++k) name = wanted + "_" + std::to_string(k);
    return name;
  }
  void name_value(std::uint32_t id, std::string wanted) {
    if (names_.size() <= id) names_.resize(id + 1);
    names_[id] = claim_name(std::move(wanted));
  }
  const std::string& name_of(std::uint32_t id) const { return names_.at(id); }

  void begin(const graph_node& node, std::uint32_t id) {
    node_ = &node;
    id_ = id;
    wrote_result_ = false;
  }
  bool wrote_result() const { return wrote_result_; }

  std::size_t operand_count() const override { return node_->inputs.size(); }
  const std::string& operand(std::size_t i) const override { return name_of(node_->inputs.at(i)); }
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
    const std::string name = claim_name(name_of(id_) + "/constant");
    set_tensor(*out_.add_initializer(), name, dtype::i64, {std::int64_t(values.size())}, values.data(),
               values.size() * sizeof(std::int64_t));
    return name;
  }
  std::string scalar(dtype t, double value) override {
    const std::string name = claim_name(name_of(id_) + "/constant");
    add_scalar(name, t, value);
    return name;
  }
  void add_scalar(const std::string& name, dtype t, double value) {
    unsigned char bytes[8] = {};
    visit_compute_dtype(t, [&](auto zero) {  // literals and constants of a form: compute dtypes
      const decltype(zero) v = static_cast<decltype(zero)>(value);
      std::memcpy(bytes, &v, sizeof v);
    });
    set_tensor(*out_.add_initializer(), name, t, {}, bytes, dtype_size(t));
  }

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

  const graph& g_;
  onnx::GraphProto& out_;
  std::set<std::string> used_;
  std::vector<std::string> names_;
  const graph_node* node_ = nullptr;
  std::uint32_t id_ = 0;
  bool wrote_result_ = false;
};

}  // namespace onnx_detail

// The ONNX model of graph g. With `weights`, every parameter is an initialiser with its value from
// that store (its dtype and extents must be the graph's where the graph knows them); without, a
// parameter is an initialiser with the value embedded in the graph, or else a graph input.
inline onnx::ModelProto to_onnx(const graph& g, const params* weights = nullptr, const onnx_export_options& options = {}) {
  onnx::ModelProto model;
  model.set_ir_version(onnx::IR_VERSION);
  model.set_producer_name(options.producer);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(onnx_opset);
  onnx::GraphProto& out = *model.mutable_graph();
  out.set_name(options.graph_name);
  onnx_detail::model_writer w(g, out);

  std::uint32_t id = 0;
  for (const graph_leaf& leaf : g.inputs) {
    w.name_value(id++, leaf.name);
    auto& info = *out.add_input();
    info.set_name(w.name_of(id - 1));
    onnx_detail::set_type(info, leaf.type, w.name_of(id - 1));
  }
  for (const graph_leaf& leaf : g.parameters) {
    w.name_value(id++, leaf.name);
    const std::string& name = w.name_of(id - 1);
    if (!weights && leaf.value) {  // embedded in the graph (a saved graph file may carry its parameters)
      onnx_detail::set_tensor(*out.add_initializer(), name, leaf.value->type, leaf.value->extents,
                              leaf.value->bytes.data(), leaf.value->bytes.size());
      continue;
    }
    if (!weights) {
      auto& info = *out.add_input();
      info.set_name(name);
      onnx_detail::set_type(info, leaf.type, name);
      continue;
    }
    if (!weights->contains(leaf.name))
      throw onnx_error("to_onnx: the parameter store has no value for parameter '" + leaf.name + "'");
    const params::entry& e = weights->at(leaf.name);
    std::vector<std::int64_t> extents(e.extents.begin(), e.extents.end());
    bool fits = e.type == leaf.type.type && extents.size() == leaf.type.shape.size();
    for (std::size_t a = 0; fits && a < extents.size(); ++a)
      fits = leaf.type.shape[a] == unknown_extent || leaf.type.shape[a] == extents[a];
    if (!fits)
      throw onnx_error("to_onnx: parameter '" + leaf.name + "' is " + std::string(dtype_name(e.type)) + " " +
                       format_extents(e.extents) + " in the store, " + graph_type_string(leaf.type) + " in the graph");
    onnx_detail::set_tensor(*out.add_initializer(), name, e.type, extents, e.bytes.data(), e.bytes.size());
  }
  for (const graph_constant& c : g.constants) {
    w.name_value(id++, c.name);
    onnx_detail::set_tensor(*out.add_initializer(), w.name_of(id - 1), c.data.type, c.data.extents, c.data.bytes.data(),
                            c.data.bytes.size());
  }

  std::vector<std::string> problems;
  for (const graph_node& node : g.nodes) {
    w.name_value(id, node.name.empty() ? node.op : node.name);
    w.begin(node, id);
    ++id;
    if (node.is_literal()) {
      w.add_scalar(w.name_of(id - 1), node.type.type, node_attributes(node).number("value"));
      continue;
    }
    const onnx_form form = find_onnx_form(node.op);
    if (!form) {
      problems.push_back("node '" + node.name + "': op '" + node.op + "' has no ONNX form");
      continue;
    }
    try {
      form(w);
      if (!w.wrote_result()) problems.push_back("node '" + node.name + "': the ONNX form of '" + node.op + "' wrote no result");
    } catch (const error& e) {  // onnx_error from a form's refusal, graph_error from a bad attribute
      problems.push_back(e.what());
    }
  }
  if (!problems.empty()) {
    std::string message = "to_onnx: " + std::to_string(problems.size()) + " node(s) have no ONNX form:";
    for (const std::string& p : problems) message += "\n  " + p;
    throw onnx_error(message);
  }

  // Outputs: a value listed twice, or a graph input or initialiser, goes out through an Identity.
  std::set<std::string> output_names;
  for (std::size_t k = 0; k < g.outputs.size(); ++k) {
    const std::uint32_t v = g.outputs[k];
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
    onnx_detail::set_type(info, g.type_of(v), name);
  }
  return model;
}

// Writes to_onnx(g, weights) to `path` (the binary protobuf form ONNX tools read).
inline void save_onnx(const graph& g, const std::string& path, const params* weights = nullptr,
                      const onnx_export_options& options = {}) {
  const std::string bytes = to_onnx(g, weights, options).SerializeAsString();
  if (!write_file_atomically(path, bytes)) throw onnx_error("save_onnx: cannot write '" + path + "'");
}

}  // namespace symflow
