#pragma once
// Export of a graph value to ONNX (opset 17): to_onnx(graph) gives the model as libonnx's
// ModelProto, save_onnx writes it. Needs Debian's libonnx-dev (CMake: find_package(ONNX), target
// onnx_proto, which defines ONNX_ML and ONNX_NAMESPACE); the rest of symflow does not.
//
//   - every node becomes the ONNX nodes its op's form writes (the op's own file, expr/onnx_form.hpp;
//     a control-flow op's sub-graphs become ONNX bodies: ir/control_flow/onnx_flow.hpp);
//     an op without one, or attribute values its form cannot express, is an onnx_error naming the op
//     and the node, and every such node is listed, not only the first;
//   - inputs (placeholders) are graph inputs, unknown extents symbolic dimensions ("x_dim0");
//   - parameters are initialisers holding the values of the given store (a checkpoint: see
//     train/checkpoint.hpp) or embedded in the graph, else graph inputs; constants are initialisers;
//   - node names are the scoped names ("dense1/matmul"), and each node's doc_string says where
//     the model code built it;
//   - a composition (an op written as several ONNX nodes) is a call of a model-local function in
//     the domain "symflow", so that the importer reads it back as the op (io/onnx_writer.hpp).
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "../core/params.hpp"
#include "files.hpp"
#include "onnx_writer.hpp"

namespace symflow {

struct onnx_export_options {
  std::string graph_name = "symflow";
  std::string producer = "symflow";
};

inline constexpr std::int64_t onnx_opset = 17;

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
  onnx_detail::model_names names{model, {}, {}, {}};
  onnx_detail::model_writer w(g, out, names);

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
  onnx_detail::write_nodes(w, g, problems);
  if (!problems.empty()) {
    std::string message = "to_onnx: " + std::to_string(problems.size()) + " node(s) have no ONNX form:";
    for (const std::string& p : problems) message += "\n  " + p;
    throw onnx_error(message);
  }
  onnx_detail::write_outputs(w, g, g.outputs);
  if (model.functions_size() > 0) {  // compositions written as functions (io/onnx_writer.hpp)
    auto* functions = model.add_opset_import();
    functions->set_domain(std::string(onnx_function_domain));
    functions->set_version(1);
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
