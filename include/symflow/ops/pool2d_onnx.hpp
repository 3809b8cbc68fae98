#ifndef SYMFLOW_OPS_POOL2D_ONNX_HPP
#define SYMFLOW_OPS_POOL2D_ONNX_HPP
// The 2-D pools' ONNX forms, both ways (expr/onnx_form.hpp): ONNX's MaxPool and AveragePool work on
// NCHW, so the operand and the result go through Transposes; the pads are in ONNX's order already
// (top, left, bottom, right). AveragePool has dilations only from opset 19.
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "../expr/onnx_form.hpp"
#include "transpose.hpp"

namespace symflow {
namespace ops {
namespace pool_detail {

template <class Pooling>
void write_onnx(onnx_node_writer& w) {
  using list = std::vector<std::int64_t>;
  const list dilation = w.has("dilation") ? w.integers("dilation") : list{1, 1};
  std::vector<onnx_attribute> a{{"kernel_shape", w.integers("window")},
                                {"strides", w.integers("stride")},
                                {"pads", w.integers("pads")},
                                {"ceil_mode", std::int64_t(w.has("ceil_mode") && w.boolean("ceil_mode"))}};
  if constexpr (Pooling::averages) {
    if (dilation != list{1, 1}) w.refuse("ONNX's AveragePool has no dilations before opset 19");
    a.push_back({"count_include_pad", std::int64_t(w.has("count_include_pad") && w.boolean("count_include_pad"))});
  } else {
    a.push_back({"dilations", dilation});
  }
  const std::string x = w.add("Transpose", {w.operand(0)}, {{"perm", list{0, 3, 1, 2}}});
  const std::string y = w.add(Pooling::onnx_op, {x}, std::move(a));
  w.add("Transpose", {y}, {{"perm", list{0, 2, 3, 1}}}, true);
}

template <class Pooling>
void read_onnx(onnx_node_reader& r, std::string_view name) {
  using list = std::vector<std::int64_t>;
  const onnx_node_reader::value x = r.input(0);
  const list xe = r.extents_of(x), k = r.integers("kernel_shape", {});
  if (xe.size() != 4 || k.size() != 2) r.refuse("only 2-D pooling (NCHW input, two kernel extents) is read");
  const list s = r.integers("strides", {1, 1});
  const list d = Pooling::averages ? list{1, 1} : r.integers("dilations", {1, 1});  // AveragePool: opset 19
  if (s.size() != 2 || d.size() != 2) r.refuse("strides and dilations need two values");
  if (r.integer("storage_order", 0) != 0) r.refuse("storage_order 1 (column-major indices)");
  const list pads = read_onnx_window_pads(r, {xe[2], xe[3]}, {(k[0] - 1) * d[0] + 1, (k[1] - 1) * d[1] + 1}, {s[0], s[1]});
  std::vector<op_attribute> a{{"window", k}, {"stride", s}, {"pads", pads}, {"dilation", d},
                              {"ceil_mode", r.integer("ceil_mode", 0) != 0}};
  if constexpr (Pooling::averages) a.push_back({"count_include_pad", r.integer("count_include_pad", 0) != 0});
  const onnx_node_reader::value nhwc = r.apply(permute_op<0>::name, {x}, {{"perm", list{0, 2, 3, 1}}});
  const onnx_node_reader::value y = r.apply(name, {nhwc}, std::move(a));
  r.result(r.apply(permute_op<0>::name, {y}, {{"perm", list{0, 3, 1, 2}}}));
}

}  // namespace pool_detail
}  // namespace ops
}  // namespace symflow
#endif  // SYMFLOW_OPS_POOL2D_ONNX_HPP
