#pragma once
// How an op says what it is in ONNX (opset 17), in its own file, without knowing ONNX's protobufs
// (io/onnx.hpp writes them). Either
//
//   static constexpr std::string_view onnx_op = "Exp";        // one ONNX node, the same operands
//
// or, where attributes, operand order or several nodes are needed,
//
//   static void write_onnx(onnx_node_writer& w) {            // softplus(x) = log(1 + exp(x))
//     w.add("Softplus", {w.operand(0)}, {}, true);
//   }
//
// An op with neither has no ONNX form: exporting a graph that uses it is an error naming the op and
// the node. A form that cannot express some attribute values or dtypes calls w.refuse(why).
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "../core/dtype.hpp"

namespace symflow {

// An ONNX node attribute: INT, FLOAT, STRING or INTS.
struct onnx_attribute {
  std::string name;
  std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>> value;
};

// The node being exported, as an op's ONNX form sees it: its operands (ONNX value names), their
// dtypes and extents (-1 where unknown), its attributes, and the means to add ONNX nodes and
// constants. The form's last node writes the node's result (add(..., true)).
class onnx_node_writer {
 public:
  virtual ~onnx_node_writer() = default;

  virtual std::size_t operand_count() const = 0;
  virtual const std::string& operand(std::size_t i) const = 0;
  virtual dtype operand_dtype(std::size_t i) const = 0;
  virtual std::vector<std::int64_t> operand_extents(std::size_t i) const = 0;
  virtual dtype result_dtype() const = 0;
  virtual std::vector<std::int64_t> result_extents() const = 0;

  // The node's attributes (as the interpreter reads them: runtime/op_table.hpp).
  virtual std::int64_t integer(std::string_view key) const = 0;
  virtual std::vector<std::int64_t> integers(std::string_view key) const = 0;
  virtual bool boolean(std::string_view key) const = 0;
  virtual double number(std::string_view key) const = 0;
  virtual dtype dtype_of(std::string_view key) const = 0;
  virtual bool has(std::string_view key) const = 0;

  // Adds the ONNX node op_type(inputs) and returns its output's name; with `result`, its output is
  // this node's result.
  virtual std::string add(std::string_view op_type, std::vector<std::string> inputs,
                          std::vector<onnx_attribute> attributes = {}, bool result = false) = 0;
  // Constants (initialisers): a 1-D int64 tensor (shapes, axes, pads), and a scalar of dtype t.
  virtual std::string int64s(const std::vector<std::int64_t>& values) = 0;
  virtual std::string scalar(dtype t, double value) = 0;
  // This node's attribute values or dtypes have no ONNX form: throws an error naming the node.
  [[noreturn]] virtual void refuse(const std::string& why) const = 0;
};

// ONNX's reductions in opset 17: ReduceSum takes its axes as a second input, the others as an
// attribute; an empty axis list (symflow: reduce nothing) is an Identity. Axes are symflow's
// (non-negative after the graph's validation).
inline void write_onnx_reduction(onnx_node_writer& w, std::string_view onnx_op, bool axes_as_input) {
  const std::vector<std::int64_t> axes = w.integers("axes");
  const std::int64_t keep = w.boolean("keepdims") ? 1 : 0;
  if (axes.empty()) {
    w.add("Identity", {w.operand(0)}, {}, true);
  } else if (axes_as_input) {
    w.add(onnx_op, {w.operand(0), w.int64s(axes)}, {{"keepdims", keep}}, true);
  } else {
    w.add(onnx_op, {w.operand(0)}, {{"axes", axes}, {"keepdims", keep}}, true);
  }
}

}  // namespace symflow
