#pragma once
// How a control-flow op says what it is in ONNX: as expr/onnx_form.hpp's forms and readings, plus
// the sub-graphs. ONNX's Scan, Loop and If hold their bodies as graph attributes; a body reads
// values of the enclosing graph by name (a closure), where symflow's bodies take everything as
// operands. The writer and reader here translate between the two; io/onnx.hpp and
// runtime/onnx_import.hpp implement them, and the op's own file (scan.hpp) says which ONNX node
// it is:
//
//   static void write_onnx(onnx_flow_writer& w);
//   static constexpr std::array<std::string_view, 1> onnx_reads{"Scan"};
//   static void read_onnx(onnx_flow_reader& r);
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../expr/onnx_form.hpp"
#include "../graph.hpp"

namespace symflow {

// A node's sub-graph as an ONNX graph attribute. Each of the sub-graph's inputs is either a
// declared input of the ONNX body (nullopt: a loop's state, a scan's step) or the enclosing graph's
// value of that name (an operand passed unchanged, which ONNX reads from the outer scope). The ONNX
// body's outputs are the sub-graph's outputs listed in `outputs` (an index may repeat: ONNX's
// Scan returns the state both as the next state and as its scan output).
struct onnx_body_binding {
  std::string attribute;    // the ONNX attribute ("body", "then_branch")
  std::string key;          // the node's attribute holding the sub-graph
  std::vector<std::optional<std::string>> outer;  // one per sub-graph input
  std::vector<std::size_t> outputs;
};

// The node being exported, for a control-flow op's form.
class onnx_flow_writer : public onnx_node_writer {
 public:
  // The node's sub-graph under `key`.
  virtual const graph& body(std::string_view key) const = 0;
  // Adds the ONNX node op_type(inputs) with the sub-graphs as graph attributes, and `outputs`
  // outputs, those not `named` left unnamed (""); output `result` is the node's result. Returns
  // the output names.
  virtual std::vector<std::string> add_with_bodies(std::string_view op_type, std::vector<std::string> inputs,
                                                   std::vector<onnx_attribute> attributes,
                                                   const std::vector<onnx_body_binding>& bodies,
                                                   const std::vector<bool>& named, std::size_t result) = 0;
};

// An ONNX body imported as a symflow sub-graph: its declared inputs first, then one input per value
// of the enclosing graph that it reads (named after it), whose values in the enclosing graph are
// `captured`, in the same order; its outputs in ONNX's order.
struct onnx_imported_body {
  graph body;
  std::vector<onnx_node_reader::value> captured;
};

// The ONNX node being imported, for a control-flow op's reading.
class onnx_flow_reader : public onnx_node_reader {
 public:
  // The graph attribute `name` imported, its declared inputs typed `inputs` (they must fit what
  // the body declares); refuses the node when the body cannot be imported, with the body's reasons.
  virtual onnx_imported_body body(std::string_view name, const std::vector<graph_type>& inputs) = 0;
  // Adds the control-flow node `op` over `operands` with these sub-graphs and integer attributes.
  virtual value apply_with_bodies(std::string_view op, std::vector<value> operands,
                                  std::vector<std::pair<std::string, graph>> bodies,
                                  std::vector<op_attribute> attributes = {}) = 0;
  // Whether the ONNX node names output k (an unnamed output need not be made).
  virtual bool wants_output(std::size_t k) const = 0;
  graph_type type_of(value v) const { return graph_type{dtype_of(v), extents_of(v)}; }
};

}  // namespace symflow
