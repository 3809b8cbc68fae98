#pragma once
// Import of ONNX models as graph values: from_onnx(model) / load_onnx(path). The result runs on the
// interpreter and is differentiated by `differentiate` like any graph value.
//
//   - graph inputs that are not initialisers become inputs (placeholders), unknown extents -1;
//   - floating-point initialisers become parameters holding their values (train them, save them
//     as a checkpoint); other initialisers, and Constant nodes, become constants;
//   - each ONNX node is read by the listed op that reads its op type (the op's own file:
//     expr/onnx_form.hpp; Scan and If by the control-flow ops, whose bodies are imported as
//     sub-graphs taking the enclosing graph's values they read as operands), or by one of the importer's compositions for ONNX ops that are not one
//     symflow op (onnx_import_compositions.hpp); its symflow nodes are named in a scope of the ONNX
//     node's name;
//   - a call of a model-local function in the domain "symflow" (what symflow's exporter writes for
//     an op whose form is a composition: io/onnx_writer.hpp) is read as that op;
//   - an ONNX node that cannot be read (an op type, attribute, attribute value or dtype symflow
//     does not have, or operands that do not fit the op's rules) is listed in one onnx_import_error
//     with every other such node; nodes that only read its outputs are not listed again.
//
// The model is untrusted input: its size, node count, tensor sizes and names are bounded
// (onnx_import_limits), every reference is checked, and nothing in it becomes code.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "../core/file_limits.hpp"
#include "../io/files.hpp"
#include "../io/onnx_tensor.hpp"
#include "../ir/onnx_forms.hpp"
#include "builder.hpp"
#include "onnx_import_compositions.hpp"
#include "onnx_import_reader.hpp"

namespace symflow {

// The ONNX opset versions (default domain) the importer reads: what ONNX 1.12 defines.
inline constexpr std::int64_t onnx_import_min_opset = 1, onnx_import_max_opset = 17;

namespace onnx_detail {

inline std::optional<std::int64_t> default_domain_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return std::nullopt;
}

// The dtype and extents of a graph input from its ValueInfoProto.
inline graph_type input_type(const onnx::ValueInfoProto& v, const onnx_import_limits& limits) {
  const std::string who = "input '" + v.name() + "'";
  if (!v.type().has_tensor_type()) throw onnx_import_error(who + ": only tensor inputs are read (not sequences, maps or optionals)");
  const auto& t = v.type().tensor_type();
  graph_type out{dtype_of_onnx_code(t.elem_type(), who), {}};
  if (!t.has_shape()) throw onnx_import_error(who + ": has no shape (its rank must be known)");
  if (std::size_t(t.shape().dim_size()) > limits.max_rank)
    throw onnx_import_error(who + ": rank " + std::to_string(t.shape().dim_size()) + " exceeds " + std::to_string(limits.max_rank));
  for (const auto& d : t.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() < 0) throw onnx_import_error(who + ": negative extent");
    out.shape.push_back(d.has_dim_value() ? d.dim_value() : unknown_extent);
  }
  return out;
}

// Reads g's nodes into `values`, in order; a node that cannot be read is added to `problems` and
// its outputs are poisoned, so that the nodes reading them are not listed again.
inline void read_nodes(const onnx::GraphProto& g, onnx_value_table& values, std::int64_t opset,
                       std::vector<std::string>& problems) {
  if (std::size_t(g.node_size()) > values.limits().max_nodes)
    throw onnx_import_error("ONNX graph '" + detail::excerpt(g.name()) + "': " + std::to_string(g.node_size()) +
                            " nodes, more than " + std::to_string(values.limits().max_nodes));
  for (int k = 0; k < g.node_size(); ++k) {
    const onnx::NodeProto& node = g.node(k);
    onnx_import_reader reader(values, node, opset, k);
    if (reader.reads_poisoned_value()) {
      reader.poison_outputs();
      continue;
    }
    try {
      reader.read();
    } catch (const error& e) {
      problems.push_back(reader.describe() + ": " + e.what());
      reader.poison_outputs();
    }
  }
}

// g's outputs as handles; one that no node or input makes is added to `problems`.
inline std::vector<graph_handle> read_outputs(const onnx::GraphProto& g, onnx_value_table& values,
                                              std::vector<std::string>& problems) {
  std::vector<graph_handle> outputs;
  for (const auto& out : g.output()) {
    if (values.is_poisoned(out.name())) continue;
    const std::optional<graph_handle> h = values.find(out.name());
    if (!h) problems.push_back("output '" + out.name() + "': no node or input produces it");
    else outputs.push_back(*h);
  }
  return outputs;
}

// The type of a body's declared input given `given` by its node: the ONNX declaration, where it
// has one, must fit (dtype, rank, extents where both are known); extents it knows fill unknowns.
inline graph_type body_input_type(const onnx::ValueInfoProto& v, const graph_type& given, const onnx_import_limits& limits) {
  if (!v.has_type()) return given;
  const graph_type declared = input_type(v, limits);
  bool fits = declared.type == given.type && declared.shape.size() == given.shape.size();
  graph_type out = given;
  for (std::size_t a = 0; fits && a < out.shape.size(); ++a) {
    if (declared.shape[a] >= 0 && given.shape[a] >= 0 && declared.shape[a] != given.shape[a]) fits = false;
    if (out.shape[a] < 0) out.shape[a] = declared.shape[a];
  }
  if (!fits)
    throw onnx_import_error("input '" + v.name() + "' is declared " + graph_type_string(declared) + " and given " +
                            graph_type_string(given));
  return out;
}

}  // namespace onnx_detail

// A graph attribute of the node being read, as a sub-graph of the graph being built.
inline onnx_imported_body onnx_import_reader::body(std::string_view name, const std::vector<graph_type>& inputs) {
  const onnx::AttributeProto* a = attribute_of(name, onnx::AttributeProto::GRAPH);
  if (!a) refuse("it has no graph attribute '" + std::string(name) + "'");
  const onnx::GraphProto& g = a->g();
  const std::string who = "its " + std::string(name);
  if (std::size_t(g.input_size()) != inputs.size())
    refuse(who + " declares " + std::to_string(g.input_size()) + " inputs; the node gives it " + std::to_string(inputs.size()));
  graph_builder builder;
  onnx_value_table table(builder, values_);
  std::vector<std::string> problems;
  try {
    for (const auto& init : g.initializer()) table.add_initializer(init);
    if (g.sparse_initializer_size() > 0) refuse(who + " has sparse initialisers, which are not read");
    for (int k = 0; k < g.input_size(); ++k)
      table.add_input(g.input(k).name(), onnx_detail::body_input_type(g.input(k), inputs[std::size_t(k)], values_.limits()));
    onnx_detail::read_nodes(g, table, opset_, problems);
  } catch (const onnx_import_error& e) {
    refuse(who + ": " + e.what());
  }
  const std::vector<graph_handle> outputs = onnx_detail::read_outputs(g, table, problems);
  if (!problems.empty()) {
    std::string message = who + " cannot be imported:";
    for (const auto& p : problems) message += "\n    " + p;
    refuse(message);
  }
  onnx_imported_body out{builder.build(outputs), {}};
  for (const graph_handle& h : table.outer_scope_values()) out.captured.push_back(h.id);
  return out;
}

// The graph value of an ONNX model; onnx_import_error when it cannot be read.
inline graph from_onnx(const onnx::ModelProto& model, const onnx_import_limits& limits = {}) {
  using namespace onnx_detail;
  const std::optional<std::int64_t> opset = default_domain_opset(model);
  if (!opset) throw onnx_import_error("ONNX model: it imports no version of the default ONNX domain");
  if (*opset < onnx_import_min_opset || *opset > onnx_import_max_opset)
    throw onnx_import_error("ONNX model: opset " + std::to_string(*opset) + " is outside the versions read (" +
                            std::to_string(onnx_import_min_opset) + " to " + std::to_string(onnx_import_max_opset) + ")");
  const onnx::GraphProto& g = model.graph();
  if (std::size_t(g.node_size()) > limits.max_nodes)
    throw onnx_import_error("ONNX model: " + std::to_string(g.node_size()) + " nodes, more than " + std::to_string(limits.max_nodes));

  graph_builder builder;
  onnx_value_table values(builder, limits);
  if (std::size_t(model.functions_size()) > limits.max_nodes)
    throw onnx_import_error("ONNX model: " + std::to_string(model.functions_size()) + " functions, more than " +
                            std::to_string(limits.max_nodes));
  std::set<std::string> functions;  // calls of these read back as symflow ops (io/onnx_writer.hpp)
  for (const auto& f : model.functions())
    if (f.domain() == onnx_function_domain) functions.insert(f.name());
  values.set_functions(&functions);
  for (const auto& init : g.initializer()) values.add_initializer(init);
  for (const auto& sparse : g.sparse_initializer())
    throw onnx_import_error("initialiser '" + sparse.values().name() + "': sparse initialisers are not read");
  for (const auto& in : g.input()) {
    if (values.is_initializer(in.name())) continue;  // an initialiser with a default listed as an input (IR < 4)
    values.add_input(in.name(), input_type(in, limits));
  }

  std::vector<std::string> problems;
  read_nodes(g, values, *opset, problems);
  const std::vector<graph_handle> outputs = read_outputs(g, values, problems);
  if (!problems.empty()) {
    std::string message = "ONNX model: " + std::to_string(problems.size()) + " node" + (problems.size() == 1 ? "" : "s") +
                          " cannot be imported:";
    for (const auto& p : problems) message += "\n  " + p;
    throw onnx_import_error(message);
  }
  graph out = builder.build(outputs);
  validate(out, "ONNX model");
  return out;
}

// Reads and imports an ONNX file (a ModelProto): a regular file of at most limits.max_file_bytes
// (io/files.hpp), else a file_error naming it; onnx_import_error names the file.
inline graph load_onnx(const std::string& path, const onnx_import_limits& limits = {}) {
  const std::string bytes = read_regular_file<std::string>(path, limits.max_file_bytes, "ONNX file");
  const std::string where = "ONNX file '" + detail::printable_path(path) + "'";
  onnx::ModelProto model;
  if (bytes.size() > std::size_t(std::numeric_limits<int>::max()) || !model.ParseFromArray(bytes.data(), int(bytes.size())))
    throw onnx_import_error(where + ": not an ONNX model (protobuf parse failed)");
  try {
    return from_onnx(model, limits);
  } catch (const onnx_import_error& e) {
    throw onnx_import_error(where + ": " + e.what());
  }
}

}  // namespace symflow
