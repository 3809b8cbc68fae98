#pragma once
// The ONNX importer's state (onnx_import.hpp): bounds on what a model may hold, and the values of
// the graph being built by ONNX name, with the enclosing graph's for a sub-graph.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "../core/utf8.hpp"
#include "../io/onnx_tensor.hpp"
#include "builder.hpp"

namespace symflow {

// Bounds on what an imported model may hold (an ONNX file is untrusted input).
struct onnx_import_limits {
  std::uint64_t max_file_bytes = (std::uint64_t(2) << 30) - 1;  // protobuf parses at most 2 GiB
  std::size_t max_nodes = std::size_t(1) << 20;
  std::size_t max_tensor_bytes = std::size_t(2) << 30;  // one initialiser or constant
  std::size_t max_rank = 16;
  std::size_t max_name_bytes = 4096;
  std::size_t max_body_depth = 16;  // sub-graphs (Scan and If bodies) inside sub-graphs
};

// What an ONNX value name stands for while a model is imported.
class onnx_value_table {
 public:
  onnx_value_table(graph_builder& b, const onnx_import_limits& limits) : builder_(b), limits_(limits) {}
  // The table of a sub-graph (a Scan's body, an If's branch) inside the graph of `outer`: a name it
  // does not define is looked up there and captured (outer_scope_values). Its initialisers are
  // constants: a sub-graph has no parameters.
  onnx_value_table(graph_builder& b, onnx_value_table& outer)
      : builder_(b), limits_(outer.limits_), functions_(outer.functions_), outer_(&outer), depth_(outer.depth_ + 1) {
    if (depth_ > limits_.max_body_depth)
      throw onnx_import_error("sub-graphs nested more than " + std::to_string(limits_.max_body_depth) + " deep");
  }
  // The enclosing graph's values this sub-graph reads, in the order of first use: each is an input
  // of the sub-graph named after it.
  const std::vector<graph_handle>& outer_scope_values() const { return captured_; }

  graph_builder& builder() { return builder_; }
  const onnx_import_limits& limits() const { return limits_; }

  // The model's functions in symflow's domain (ir/onnx_forms.hpp: onnx_function_domain), by name.
  void set_functions(const std::set<std::string>* names) { functions_ = names; }
  const std::set<std::string>* functions() const { return functions_; }
  bool has_function(const std::string& name) const { return functions_ && functions_->count(name); }

  void add_initializer(const onnx::TensorProto& t) {
    check_name(t.name(), "initialiser");
    if (initializers_.count(t.name()) || values_.count(t.name()))
      throw onnx_import_error("initialiser '" + t.name() + "': the name is defined twice");
    graph_tensor data = from_onnx_tensor(t, "initialiser '" + t.name() + "'", limits_.max_tensor_bytes);
    if (is_trainable(data)) parameter_names_.insert(t.name());
    initializers_.emplace(t.name(), std::move(data));
  }
  // A constant whose elements may be computed with at import time: not a parameter (weights stay
  // trainable), and small (shape arithmetic, axes, indices).
  bool is_foldable(const std::string& name) {
    if (parameter_names_.count(name)) return false;
    const graph_tensor* t = constant_data(name);
    return t && t->element_count() <= fold_limit;
  }
  static constexpr std::size_t fold_limit = std::size_t(1) << 16;
  bool is_initializer(const std::string& name) const { return initializers_.count(name) != 0; }
  void add_input(const std::string& name, graph_type type) {
    check_name(name, "input");
    define(name, builder_.input(name, type.type, std::move(type.shape)));
  }
  // A constant's value, kept for readings that need its elements (Reshape's shape, Slice's starts).
  graph_handle add_constant(const std::string& name, graph_tensor data) {
    graph_handle h = builder_.constant(data);
    constant_data_[h.id] = std::move(data);
    if (!name.empty()) define(name, h);
    return h;
  }
  void define(const std::string& name, graph_handle h) {
    check_name(name, "value");
    if (values_.count(name) || initializers_.count(name) || poisoned_.count(name) || shapes_.count(name))
      throw onnx_import_error("value '" + name + "' is defined twice (ONNX graphs are single assignment)");
    values_.emplace(name, h);
  }
  // A Shape of a value whose extents are not all known: no tensor, but what Expand can read.
  void define_shape(const std::string& name, graph_handle of) {
    check_name(name, "value");
    if (values_.count(name) || initializers_.count(name) || shapes_.count(name))
      throw onnx_import_error("value '" + name + "' is defined twice (ONNX graphs are single assignment)");
    shapes_.emplace(name, of);
  }
  std::optional<graph_handle> shape_source(const std::string& name) const {
    const auto it = shapes_.find(name);
    return it == shapes_.end() ? std::nullopt : std::optional<graph_handle>(it->second);
  }
  void poison(const std::string& name) { poisoned_.insert(name); }
  bool is_poisoned(const std::string& name) const { return poisoned_.count(name) != 0; }

  // The value named `name`: an initialiser becomes a parameter (floating point, not a scalar) or a
  // constant on first use.
  std::optional<graph_handle> find(const std::string& name) {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    auto init = initializers_.find(name);
    if (init == initializers_.end()) return capture(name);
    graph_tensor data = std::move(init->second);
    initializers_.erase(init);
    if (is_trainable(data)) {
      const graph_type t{data.type, data.extents};
      return values_.emplace(name, builder_.parameter(name, t.type, t.shape, std::move(data))).first->second;
    }
    graph_handle h = add_constant("", std::move(data));
    values_.emplace(name, h);
    return h;
  }
  // The elements of a constant value (an initialiser, a Constant node, or a value an ONNX reading
  // made a constant), or nullptr.
  const graph_tensor* constant_data(const std::string& name) {
    if (auto init = initializers_.find(name); init != initializers_.end()) return &init->second;
    auto it = values_.find(name);
    if (it == values_.end() && outer_ && outer_->is_foldable(name) && capture(name)) it = values_.find(name);
    if (it == values_.end()) return nullptr;
    auto c = constant_data_.find(it->second.id);
    if (c != constant_data_.end()) return &c->second;
    // A parameter made from an initialiser keeps its value.
    if (const graph_leaf* leaf = builder_.leaf(it->second.id); leaf && leaf->value) return &*leaf->value;
    return nullptr;
  }

 private:
  // Floating-point initialisers of rank 1 or more are weights (parameters); scalars are the
  // constants of a formula (exporters, symflow's included, write literals as scalar initialisers).
  bool is_trainable(const graph_tensor& t) const { return !outer_ && is_floating_dtype(t.type) && !t.extents.empty(); }
  // A name the sub-graph does not define, from the enclosing graph: a small constant is copied in
  // (readings may need its elements), any other value becomes an input of the sub-graph.
  std::optional<graph_handle> capture(const std::string& name) {
    if (!outer_ || poisoned_.count(name) || shapes_.count(name)) return std::nullopt;
    if (outer_->is_foldable(name)) return add_constant(name, *outer_->constant_data(name));
    const std::optional<graph_handle> h = outer_->find(name);
    if (!h) return std::nullopt;
    captured_.push_back(*h);
    const graph_type& t = h->type();
    graph_handle in = builder_.input(name, t.type, t.shape);
    define(name, in);
    return in;
  }
  void check_name(const std::string& name, const char* what) const {
    if (name.size() > limits_.max_name_bytes)
      throw onnx_import_error(std::string(what) + " name of " + std::to_string(name.size()) + " bytes, more than " +
                              std::to_string(limits_.max_name_bytes));
    // Names travel into the graph value, whose files hold UTF-8 (protobuf does not check ONNX's).
    if (!detail::valid_utf8(name)) throw onnx_import_error(std::string(what) + " name '" + detail::excerpt(name) + "' is not valid UTF-8");
  }

 public:
  void check_node_name(const std::string& name) const { check_name(name, "node"); }

 private:
  graph_builder& builder_;
  onnx_import_limits limits_;
  const std::set<std::string>* functions_ = nullptr;
  std::map<std::string, graph_tensor> initializers_;  // not yet used as a value
  std::map<std::string, graph_handle> values_;
  std::map<std::uint32_t, graph_tensor> constant_data_;
  std::set<std::string> poisoned_;  // outputs of nodes that could not be read
  std::set<std::string> parameter_names_;  // floating-point initialisers
  std::map<std::string, graph_handle> shapes_;  // define_shape
  onnx_value_table* outer_ = nullptr;
  std::size_t depth_ = 0;
  std::vector<graph_handle> captured_;  // outer values read, each an input (capture)
};

}  // namespace symflow
