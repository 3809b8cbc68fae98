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
//
// Import reads the other way. An op with `onnx_op` and no reading of its own reads that ONNX node
// back (same operands, no attributes). An op whose ONNX node has attributes or constant inputs
// declares which ONNX op types it reads, and how:
//
//   static constexpr std::array<std::string_view, 1> onnx_reads{"Transpose"};
//   static void read_onnx(onnx_node_reader& r) {
//     r.result(r.apply(name, {r.input(0)}, {{"perm", r.integers("perm", reversed_axes)}}));
//   }
//
// The reading is given the ONNX node (its inputs as values of the graph being built, attributes,
// the values of constant inputs) and builds it out of symflow nodes (runtime/onnx_import.hpp).
#include <algorithm>
#include <array>
#include <optional>
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

// An attribute of a symflow node that an ONNX reading builds (the graph's attribute values, less
// sub-graphs).
using op_attribute_value = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>>;
struct op_attribute {
  std::string key;
  op_attribute_value value;
};

// The ONNX node being imported, as an op's reading sees it. Values are those of the graph being
// built; `apply` adds a symflow node typed by the op's own rules (a shape or dtype error names the
// ONNX node). Every attribute the ONNX node carries must be asked for (integer, integers, number,
// text, has): the importer refuses a node with an attribute no reading looked at, naming it.
class onnx_node_reader {
 public:
  using value = std::uint32_t;
  virtual ~onnx_node_reader() = default;

  virtual std::string_view op_type() const = 0;
  virtual std::int64_t opset() const = 0;  // the model's version of the default ONNX domain
  // Inputs: an omitted optional input ("" in ONNX, or past the end) is absent; input(i) of an
  // absent one refuses the node.
  virtual std::size_t input_count() const = 0;
  virtual bool has_input(std::size_t i) const = 0;
  virtual value input(std::size_t i) const = 0;
  virtual dtype dtype_of(value v) const = 0;
  virtual std::vector<std::int64_t> extents_of(value v) const = 0;  // -1 where unknown
  // The elements of input i when it is a constant (an initialiser or a Constant node's output),
  // converted to integers or numbers; refuses the node when it is computed.
  virtual bool is_constant(std::size_t i) const = 0;
  virtual std::vector<std::int64_t> constant_integers(std::size_t i) const = 0;
  virtual std::vector<double> constant_numbers(std::size_t i) const = 0;
  // Input i when it is ONNX's Shape of a value whose extents are not all known (an exporter's
  // Shape(like) feeding a Reshape or an Expand): that value, whose shape the input is.
  virtual std::optional<value> shape_source_of(std::size_t i) const = 0;

  virtual bool has(std::string_view name) const = 0;
  virtual std::int64_t integer(std::string_view name, std::int64_t fallback) const = 0;
  virtual std::vector<std::int64_t> integers(std::string_view name, std::vector<std::int64_t> fallback) const = 0;
  virtual double number(std::string_view name, double fallback) const = 0;
  virtual std::string text(std::string_view name, std::string fallback) const = 0;

  virtual value apply(std::string_view op, std::vector<value> operands, std::vector<op_attribute> attributes = {}) = 0;
  virtual value scalar(dtype t, double v) = 0;  // a literal
  // The ONNX node's output `output` is v.
  virtual void result(value v, std::size_t output = 0) = 0;
  [[noreturn]] virtual void refuse(const std::string& why) const = 0;

  // An axis counted from the last when negative, checked against `rank`.
  std::int64_t axis(std::int64_t a, std::size_t rank) const {
    const std::int64_t r = std::int64_t(rank);
    if (a < -r || a >= r) refuse("axis " + std::to_string(a) + " is outside rank " + std::to_string(rank));
    return a < 0 ? a + r : a;
  }
  std::vector<std::int64_t> axes(std::vector<std::int64_t> list, std::size_t rank) const {
    for (auto& a : list) a = axis(a, rank);
    return list;
  }
  std::size_t rank_of(std::size_t input_index) const { return extents_of(input(input_index)).size(); }
};

// The axes of an ONNX reduction (the reductions here and the importer's compositions of the
// others): from the attribute (opset < 13 for ReduceSum, < 18 for the others) or the second input,
// counted from 0, sorted, each once; every axis when none are given, or nothing (the reduction is
// the identity) under noop_with_empty_axes.
inline std::optional<std::vector<std::int64_t>> read_onnx_reduction_axes(onnx_node_reader& r) {
  const std::size_t rank = r.rank_of(0);
  std::vector<std::int64_t> axes;
  if (r.has("axes")) axes = r.integers("axes", {});
  if (r.has_input(1)) axes = r.constant_integers(1);
  if (axes.empty()) {
    if (r.integer("noop_with_empty_axes", 0) != 0) return std::nullopt;
    for (std::size_t a = 0; a < rank; ++a) axes.push_back(std::int64_t(a));
  }
  axes = r.axes(axes, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) r.refuse("an axis is listed twice");
  return axes;
}

// Reads ONNX's reductions back (the inverse of write_onnx_reduction) as the op `op`.
inline void read_onnx_reduction(onnx_node_reader& r, std::string_view op) {
  const bool keep = r.integer("keepdims", 1) != 0;
  const std::optional<std::vector<std::int64_t>> axes = read_onnx_reduction_axes(r);
  if (!axes) return r.result(r.input(0));
  r.result(r.apply(op, {r.input(0)}, {{"axes", *axes}, {"keepdims", keep}}));
}

// ONNX's global pools (GlobalAveragePool, GlobalMaxPool): a reduction over every axis after N and C,
// kept.
inline void read_onnx_global_pool(onnx_node_reader& r, std::string_view op) {
  const std::size_t rank = r.rank_of(0);
  if (rank < 3) r.refuse("a global pool of rank " + std::to_string(rank) + " (N, C and at least one spatial axis expected)");
  std::vector<std::int64_t> axes;
  for (std::size_t a = 2; a < rank; ++a) axes.push_back(std::int64_t(a));
  r.result(r.apply(op, {r.input(0)}, {{"axes", axes}, {"keepdims", true}}));
}

// The padding of ONNX's 2-D window ops (Conv, MaxPool, AveragePool) as [top, left, bottom, right]:
// the pads attribute, or auto_pad's SAME_UPPER (the odd pad at the end) and SAME_LOWER (at the
// start) computed from the input extents, dilated window spans and strides; VALID pads nothing.
inline std::vector<std::int64_t> read_onnx_window_pads(const onnx_node_reader& r, const std::array<std::int64_t, 2>& in,
                                                       const std::array<std::int64_t, 2>& span,
                                                       const std::array<std::int64_t, 2>& stride) {
  const std::string mode = r.text("auto_pad", "NOTSET");
  std::vector<std::int64_t> pads = r.integers("pads", {0, 0, 0, 0});
  if (mode == "NOTSET") {
    if (pads.size() != 4) r.refuse("pads has " + std::to_string(pads.size()) + " values, not 4");
    for (std::int64_t p : pads)
      if (p < 0) r.refuse("a negative pad");
    return pads;
  }
  if (mode == "VALID") return {0, 0, 0, 0};
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER") r.refuse("auto_pad '" + mode + "'");
  for (std::size_t i = 0; i < 2; ++i) {
    if (in[i] < 0) r.refuse("auto_pad " + mode + " over a spatial extent that is not known");
    if (stride[i] < 1) r.refuse("a stride below 1");
    const std::int64_t out = (in[i] + stride[i] - 1) / stride[i];
    const std::int64_t total = std::max<std::int64_t>((out - 1) * stride[i] + span[i] - in[i], 0);
    const std::int64_t small = total / 2, large = total - small;
    pads[i] = mode == "SAME_UPPER" ? small : large;
    pads[i + 2] = mode == "SAME_UPPER" ? large : small;
  }
  return pads;
}

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
