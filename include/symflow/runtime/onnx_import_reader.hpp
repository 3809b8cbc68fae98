#pragma once
// The reader an op's or a composition's reading of one ONNX node is given while a model is
// imported (onnx_import.hpp): expr/onnx_form.hpp's onnx_node_reader, ir/control_flow/onnx_flow.hpp's
// sub-graphs for the control-flow ops, and graph handles for the compositions.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "../core/excerpt.hpp"
#include "../io/onnx_tensor.hpp"
#include "../ir/onnx_forms.hpp"
#include "builder.hpp"
#include "interpreter.hpp"
#include "onnx_import_values.hpp"

namespace symflow {

class onnx_import_reader;
// A composition's reading (onnx_import_compositions.hpp).
using onnx_composition = void (*)(onnx_import_reader&);
inline onnx_composition find_onnx_composition(std::string_view type);

// One ONNX node being read.
class onnx_import_reader final : public onnx_flow_reader {
 public:
  onnx_import_reader(onnx_value_table& values, const onnx::NodeProto& node, std::int64_t opset, int index)
      : values_(values), node_(node), opset_(opset), index_(index) {}

  // "node 3 'conv1' (Conv)".
  std::string describe() const {
    std::string s = "node " + std::to_string(index_);
    if (!node_.name().empty()) s += " '" + node_.name() + "'";
    return s + " (" + (node_.domain().empty() ? "" : node_.domain() + ".") + node_.op_type() + ")";
  }

  bool reads_poisoned_value() const {
    for (const auto& in : node_.input())
      if (values_.is_poisoned(in)) return true;
    return false;
  }
  void poison_outputs() {
    for (const auto& out : node_.output())
      if (!out.empty()) values_.poison(out);
  }

  // Reads the node: its op's or composition's reading, then the checks that every attribute was
  // understood and every requested output made.
  void read() {
    if (is_function_call()) {
      if (!values_.has_function(node_.op_type()))
        refuse("the model has no function '" + detail::excerpt(node_.op_type()) + "' in the domain '" +
               std::string(onnx_function_domain) + "'");
      if (!find_onnx_form(function_op()))
        refuse("'" + detail::excerpt(function_op()) + "' is not a symflow op with an ONNX form");
    } else if (!node_.domain().empty() && node_.domain() != "ai.onnx") {
      refuse("the domain '" + node_.domain() + "' is not read");
    } else if (!find_onnx_reading(node_.op_type()) && !find_onnx_flow_reading(node_.op_type()) &&
               !find_onnx_composition(node_.op_type())) {
      refuse("no symflow op or composition reads this ONNX op type");
    }
    for (const auto& in : node_.input())
      if (!in.empty() && !values_.find(in) && !values_.constant_data(in) && !values_.shape_source(in))
        refuse("input '" + in + "' is not defined before it");
    values_.check_node_name(node_.name());  // the scope of the nodes it becomes
    if (folds()) return fold();
    auto scope = values_.builder().scope(node_.name().empty() ? node_.op_type() : node_.name());
    read_by_op_or_composition();
    finish();
  }

 private:
  // A node whose inputs are all small constants that are not parameters (Shape -> Gather -> Concat
  // -> Reshape chains, as exporters write them) is computed here: read into a scratch graph over
  // those constants, run, and its outputs become constants that later readings can read.
  bool folds() {
    if (node_.input_size() == 0) return false;
    for (const auto& a : node_.attribute())  // a body may read any value of the graph
      if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS || a.has_g()) return false;
    for (const auto& in : node_.input())
      if (!in.empty() && !values_.is_foldable(in)) return false;
    return true;
  }
  // The listed op's reading of this node's op type, else the importer's composition (read() has
  // checked that one of them exists).
  void read_by_op_or_composition() {
    if (is_function_call()) return read_function_call();
    if (const onnx_reading by_op = find_onnx_reading(node_.op_type())) return by_op(*this);
    if (const onnx_flow_reading by_flow = find_onnx_flow_reading(node_.op_type())) return by_flow(*this);
    find_onnx_composition(node_.op_type())(*this);
  }
  // A call of a function that symflow's exporter wrote for an op whose form is a composition
  // (io/onnx_writer.hpp): the op itself, over the call's inputs. The function's body is what other
  // runtimes compute; the op's own rules check the operands.
  bool is_function_call() const { return node_.domain() == onnx_function_domain; }
  std::string function_op() const {  // "gelu__2" -> "gelu"
    const std::string& name = node_.op_type();
    const std::size_t mark = name.rfind("__");
    if (mark == std::string::npos || mark + 2 == name.size()) return name;
    for (std::size_t i = mark + 2; i < name.size(); ++i)
      if (name[i] < '0' || name[i] > '9') return name;
    return name.substr(0, mark);
  }
  void read_function_call() {
    std::vector<value> operands;
    for (std::size_t i = 0; i < input_count(); ++i) operands.push_back(input(i));
    result(apply(function_op(), std::move(operands), {}), 0);
  }
  void fold() {
    graph_builder scratch_builder;
    onnx_value_table scratch(scratch_builder, values_.limits());
    scratch.set_functions(values_.functions());
    for (const auto& in : node_.input())
      if (!in.empty() && !scratch.find(in)) scratch.add_constant(in, *values_.constant_data(in));
    onnx_import_reader inner(scratch, node_, opset_, index_);
    inner.read_by_op_or_composition();
    inner.finish_checks();
    std::vector<graph_handle> outputs;
    for (const auto& [k, h] : inner.results_) outputs.push_back(h);
    const std::vector<runtime_tensor> computed = run_graph(scratch_builder.build(outputs), {});
    std::size_t j = 0;
    for (const auto& [k, h] : inner.results_) {
      if (computed[j].size() > onnx_value_table::fold_limit) refuse("a constant result of more than 2^16 elements");
      constant_result(computed[j++].to_graph_tensor(), k);
    }
    for (const auto& [k, h] : results_) values_.define(node_.output(int(k)), h);
  }
  // Every attribute understood, every requested output made.
  void finish_checks() const {
    for (const auto& [k, h] : shape_results_)
      if (k >= output_count() || node_.output(int(k)).empty()) refuse("it has no output " + std::to_string(k));
    for (const auto& [k, h] : results_)
      if (k >= output_count() || node_.output(int(k)).empty())
        refuse("it has no output " + std::to_string(k) + " (" + std::to_string(output_count()) + " outputs are named)");
    std::string unread;
    for (const auto& a : node_.attribute())
      if (!read_.count(a.name())) unread += (unread.empty() ? "'" : ", '") + a.name() + "'";
    if (!unread.empty()) refuse("attributes not supported: " + unread);
    for (int k = 0; k < node_.output_size(); ++k)
      if (!node_.output(k).empty() && !results_.count(std::size_t(k)) && !shape_results_.count(std::size_t(k)))
        refuse("output " + std::to_string(k) + " ('" + node_.output(k) + "') is not supported");
  }
  void finish() {
    finish_checks();
    for (const auto& [k, h] : results_) values_.define(node_.output(int(k)), h);
    for (const auto& [k, h] : shape_results_) values_.define_shape(node_.output(int(k)), h);
  }

 public:

  // --- onnx_node_reader ---
  std::string_view op_type() const override { return node_.op_type(); }
  std::int64_t opset() const override { return opset_; }
  std::size_t input_count() const override { return std::size_t(node_.input_size()); }
  bool has_input(std::size_t i) const override { return i < input_count() && !node_.input(int(i)).empty(); }
  value input(std::size_t i) const override { return handle_of_input(i).id; }
  dtype dtype_of(value v) const override { return values_.builder().type_of(v).type; }
  std::vector<std::int64_t> extents_of(value v) const override { return values_.builder().type_of(v).shape; }
  bool is_constant(std::size_t i) const override { return has_input(i) && values_.constant_data(node_.input(int(i))); }
  std::vector<std::int64_t> constant_integers(std::size_t i) const override {
    std::vector<std::int64_t> out;
    visit_constant(i, [&](auto v) { out.push_back(static_cast<std::int64_t>(v)); }, true);
    return out;
  }
  std::optional<value> shape_source_of(std::size_t i) const override {
    const std::optional<graph_handle> like = shape_source(i);
    return like ? std::optional<value>(like->id) : std::nullopt;
  }
  std::vector<double> constant_numbers(std::size_t i) const override {
    std::vector<double> out;
    visit_constant(i, [&](auto v) { out.push_back(static_cast<double>(v)); }, false);
    return out;
  }
  bool has(std::string_view name) const override { return find_attribute(name) != nullptr; }
  std::int64_t integer(std::string_view name, std::int64_t fallback) const override {
    const auto* a = attribute_of(name, onnx::AttributeProto::INT);
    return a ? a->i() : fallback;
  }
  std::vector<std::int64_t> integers(std::string_view name, std::vector<std::int64_t> fallback) const override {
    const auto* a = attribute_of(name, onnx::AttributeProto::INTS);
    if (!a) return fallback;
    if (std::size_t(a->ints_size()) > values_.limits().max_nodes) refuse("attribute '" + std::string(name) + "' is too long");
    return {a->ints().begin(), a->ints().end()};
  }
  double number(std::string_view name, double fallback) const override {
    const auto* a = attribute_of(name, onnx::AttributeProto::FLOAT);
    return a ? double(a->f()) : fallback;
  }
  std::string text(std::string_view name, std::string fallback) const override {
    const auto* a = attribute_of(name, onnx::AttributeProto::STRING);
    return a ? a->s() : fallback;
  }
  value apply(std::string_view op, std::vector<value> operands, std::vector<op_attribute> attributes) override {
    return apply_with_bodies(op, std::move(operands), {}, std::move(attributes));
  }
  // --- onnx_flow_reader ---
  onnx_imported_body body(std::string_view name, const std::vector<graph_type>& inputs) override;  // onnx_import.hpp
  value apply_with_bodies(std::string_view op, std::vector<value> operands, std::vector<std::pair<std::string, graph>> bodies,
                          std::vector<op_attribute> attributes) override {
    std::vector<graph_handle> in;
    for (value v : operands) in.push_back(values_.builder().handle(v));
    std::vector<graph_attribute> a;
    for (auto& [key, g] : bodies) a.push_back({key, subgraph{std::make_shared<const graph>(std::move(g))}});
    for (auto& at : attributes)
      a.push_back({std::move(at.key), std::visit([](auto&& x) { return attribute_value(std::move(x)); }, std::move(at.value))});
    return values_.builder().apply(op, in, std::move(a)).id;
  }
  bool wants_output(std::size_t k) const override { return k < output_count() && !node_.output(int(k)).empty(); }

  // (graph_builder::literal refuses a number an integer dtype cannot hold; read() reports it.)
  value scalar(dtype t, double v) override { return values_.builder().literal(v, t).id; }
  void result(value v, std::size_t output) override { results_[output] = values_.builder().handle(v); }
  [[noreturn]] void refuse(const std::string& why) const override { throw onnx_import_error(why); }

  // --- for the compositions ---
  graph_builder& builder() { return values_.builder(); }
  graph_handle handle(value v) { return values_.builder().handle(v); }
  graph_handle operand(std::size_t i) { return handle_of_input(i); }
  void result(const graph_handle& h, std::size_t output = 0) { results_[output] = h; }
  std::size_t output_count() const { return std::size_t(node_.output_size()); }
  // Input i when it is the Shape of a value whose extents are not all known: that value.
  std::optional<graph_handle> shape_source(std::size_t i) const {
    return has_input(i) ? values_.shape_source(node_.input(int(i))) : std::nullopt;
  }
  // This node's output k is the shape of `of` (Shape of unknown extents).
  void shape_result(const graph_handle& of, std::size_t output = 0) { shape_results_[output] = of; }
  // A constant value of this node's output k (Constant, Shape): later readings can read its elements.
  void constant_result(graph_tensor data, std::size_t output = 0) {
    results_[output] = values_.add_constant("", std::move(data));
  }
  const onnx::AttributeProto* attribute_of(std::string_view name, onnx::AttributeProto::AttributeType type) const {
    const onnx::AttributeProto* a = find_attribute(name);
    if (!a) return nullptr;
    if (a->type() != type && !(a->type() == onnx::AttributeProto::UNDEFINED && attribute_has_field(*a, type)))
      refuse("attribute '" + std::string(name) + "' is a " + onnx::AttributeProto::AttributeType_Name(a->type()) + ", not a " +
             onnx::AttributeProto::AttributeType_Name(type));
    return a;
  }
  const onnx_import_limits& limits() const { return values_.limits(); }

 private:
  static bool attribute_has_field(const onnx::AttributeProto& a, onnx::AttributeProto::AttributeType type) {
    switch (type) {
      case onnx::AttributeProto::INT: return a.has_i();
      case onnx::AttributeProto::FLOAT: return a.has_f();
      case onnx::AttributeProto::STRING: return a.has_s();
      case onnx::AttributeProto::TENSOR: return a.has_t();
      case onnx::AttributeProto::INTS: return a.ints_size() > 0;
      case onnx::AttributeProto::FLOATS: return a.floats_size() > 0;
      default: return false;
    }
  }
  const onnx::AttributeProto* find_attribute(std::string_view name) const {
    read_.insert(std::string(name));
    for (const auto& a : node_.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  graph_handle handle_of_input(std::size_t i) const {
    if (!has_input(i)) refuse("input " + std::to_string(i) + " is missing");
    const std::optional<graph_handle> h = values_.find(node_.input(int(i)));
    if (!h && values_.shape_source(node_.input(int(i))))
      refuse("input '" + node_.input(int(i)) + "' is a shape known only at run time, which only Expand and Reshape (with allowzero) read");
    if (!h) refuse("input '" + node_.input(int(i)) + "' is not defined before it");
    return *h;
  }
  template <class F>
  void visit_constant(std::size_t i, F&& f, bool integral) const {
    if (!has_input(i)) refuse("input " + std::to_string(i) + " is missing");
    const graph_tensor* t = values_.constant_data(node_.input(int(i)));
    if (!t && values_.shape_source(node_.input(int(i))))
      refuse("input " + std::to_string(i) + " ('" + node_.input(int(i)) + "') is a shape known only at run time; it must be a constant");
    if (!t) refuse("input " + std::to_string(i) + " ('" + node_.input(int(i)) + "') must be a constant");
    if (integral && (is_floating_dtype(t->type) || t->type == dtype::boolean))
      refuse("input " + std::to_string(i) + " ('" + node_.input(int(i)) + "') is not an integer tensor");
    visit_dtype(t->type, [&](auto zero) {
      using T = decltype(zero);
      const std::size_t n = t->bytes.size() / sizeof(T);
      for (std::size_t k = 0; k < n; ++k) {
        T v;
        std::memcpy(&v, t->bytes.data() + k * sizeof(T), sizeof(T));
        if constexpr (std::is_same_v<T, bool>) f(int(v));
        else if constexpr (std::is_arithmetic_v<T>) f(v);
        else f(float(v));  // half, bfloat16
      }
    });
  }

  onnx_value_table& values_;
  const onnx::NodeProto& node_;
  std::int64_t opset_;
  int index_;
  mutable std::set<std::string> read_;
  std::map<std::size_t, graph_handle> results_;
  std::map<std::size_t, graph_handle> shape_results_;
};

}  // namespace symflow
