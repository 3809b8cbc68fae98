#ifndef SYMFLOW_OPS_CONV2D_HPP
#define SYMFLOW_OPS_CONV2D_HPP
// conv2d: 2-D convolution, a kernel op. Layout, padding and the CPU method (im2col and one GEMM per
// chunk of images) are described in conv2d_geometry.hpp, which the three convolution ops share; the
// two adjoints its gradient is written with are ops of their own (conv2d_backprop_input.hpp,
// conv2d_backprop_filter.hpp), included here so that conv2d.hpp gives all three.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "../core/eigen.hpp"

#include "conv2d_backprop_filter.hpp"
#include "conv2d_backprop_input.hpp"
#include "conv2d_columns.hpp"
#include "conv2d_depthwise.hpp"
#include "conv2d_geometry.hpp"
#include "add.hpp"
#include "law_example.hpp"
#include "pad.hpp"
#include "transpose.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {
namespace conv_detail {

// Y = im2col(X) W, one GEMM per chunk of images and group (group g: its channels of X, its block of
// W's and Y's columns); chunks spread over threads (conv2d_columns.hpp).
// Depthwise convolutions (one input channel per group) run a direct loop (conv2d_depthwise.hpp).
template <class T>
void forward(const geometry& g, const T* x, const T* w, T* y) {
  if (is_depthwise(g)) return depthwise_forward(g, x, w, y);
  const std::size_t patch = g.patch(), rows = g.pixels();
  if (patch == 0) {
    std::fill_n(y, g.batch * g.pixels() * g.filters, T(0));
    return;
  }
  for_each_chunk<T>(g, [&](std::size_t n0, std::size_t count, T* col) {
    for (std::size_t group = 0; group < g.groups; ++group) {
      im2col(g, x, n0, count, group, col);  // fully writes the chunk's column matrix
      Eigen::Map<const row_major<T>> cm(col, Eigen::Index(count * rows), Eigen::Index(patch));
      group_block(y + n0 * rows * g.filters, count * rows, g.group_filters(), g.filters, group).noalias() =
          cm * group_block(w, patch, g.group_filters(), g.filters, group);
    }
  });
}
}  // namespace conv_detail

// conv2d(x [N,H,W,C], w [KH,KW,C,O]) -> [N,OH,OW,O].
template <std::size_t Stride, padding Padding, std::size_t Dilation, std::size_t Groups>
struct conv2d_op : conv2d_attributes<Stride, Padding, Dilation, Groups> {
  static constexpr std::string_view name = "conv2d";
  // ONNX Conv works on NCHW with an OIHW filter: operands and result go through Transposes. Same
  // padding is ONNX's SAME_UPPER (the odd pad at the end, on the dilated window's span, as here).
  static void write_onnx(onnx_node_writer& w) {
    using list = std::vector<std::int64_t>;
    const std::int64_t s = w.integer("stride"), d = w.has("dilation") ? w.integer("dilation") : 1,
                       g = w.has("groups") ? w.integer("groups") : 1;
    const std::string x = w.add("Transpose", {w.operand(0)}, {{"perm", list{0, 3, 1, 2}}});
    const std::string f = w.add("Transpose", {w.operand(1)}, {{"perm", list{3, 2, 0, 1}}});
    const std::string y = w.add("Conv", {x, f},
                                {{"strides", list{s, s}}, {"dilations", list{d, d}}, {"group", g},
                                 {"auto_pad", std::string(w.boolean("same_padding") ? "SAME_UPPER" : "VALID")}});
    w.add("Transpose", {y}, {{"perm", list{0, 2, 3, 1}}}, true);
  }
  // ONNX Conv over NCHW with an OIHW filter and an optional bias [O]: Transposes around this op,
  // explicit or SAME_LOWER pads as a pad before it.
  static constexpr std::array<std::string_view, 1> onnx_reads{"Conv"};
  static void read_onnx(onnx_node_reader& r) {
    using list = std::vector<std::int64_t>;
    const onnx_node_reader::value x = r.input(0), w = r.input(1);
    const list xe = r.extents_of(x), we = r.extents_of(w);
    if (xe.size() != 4 || we.size() != 4) r.refuse("only 2-D convolutions (NCHW input, OIHW filter) are read");
    if (we[2] < 0 || we[3] < 0) r.refuse("a filter whose spatial extents are not known");
    const list strides = r.integers("strides", {1, 1}), dilations = r.integers("dilations", {1, 1});
    if (strides.size() != 2 || dilations.size() != 2) r.refuse("strides and dilations need two values");
    if (strides[0] != strides[1] || dilations[0] != dilations[1])
      r.refuse("strides or dilations that differ between the two spatial axes");
    if (r.integers("kernel_shape", {we[2], we[3]}) != list{we[2], we[3]}) r.refuse("kernel_shape differs from the filter's extents");
    const bool same = r.text("auto_pad", "NOTSET") == "SAME_UPPER";  // this op's own same padding
    const list pads = same ? list{0, 0, 0, 0}
                           : read_onnx_window_pads(r, {xe[2], xe[3]}, {(we[2] - 1) * dilations[0] + 1, (we[3] - 1) * dilations[1] + 1},
                                                   {strides[0], strides[1]});
    onnx_node_reader::value nhwc = r.apply(permute_op<0>::name, {x}, {{"perm", list{0, 2, 3, 1}}});
    if (pads != list{0, 0, 0, 0})
      nhwc = r.apply(pad_op<0, 0, 0>::name, {nhwc}, {{"pads", list{0, pads[0], pads[1], 0, 0, pads[2], pads[3], 0}}, {"mode", std::int64_t(0)}});
    const onnx_node_reader::value hwio = r.apply(permute_op<0>::name, {w}, {{"perm", list{2, 3, 1, 0}}});
    onnx_node_reader::value y = r.apply(name, {nhwc, hwio},
                                        {{"stride", strides[0]}, {"same_padding", same}, {"dilation", dilations[0]},
                                         {"groups", r.integer("group", 1)}});
    if (r.has_input(2)) y = r.apply(add_op::name, {y, r.input(2)});
    r.result(r.apply(permute_op<0>::name, {y}, {{"perm", list{0, 3, 1, 2}}}));
  }
  static constexpr std::string_view doc =
      "conv2d(x, w), attributes stride (>= 1, the same along both spatial axes), same_padding, "
      "dilation (>= 1, default 1) and groups (>= 1, default 1): 2-D convolution of an NHWC input x [N, "
      "H, W, C] with an HWIO filter w [KH, KW, C/groups, O], giving [N, OH, OW, O]: y[n, i, j, o] = sum "
      "over kh, kw and the c of o's group of x[n, i*stride + kh*dilation - pad_top, j*stride + "
      "kw*dilation - pad_left, c] * w[kh, kw, c - group*C/groups, o], positions outside the input "
      "reading 0 (the filter is not flipped: a cross-correlation, as TensorFlow's conv2d and ONNX "
      "Conv). With groups G the input channels split into G runs of C/G and the outputs into G runs of "
      "O/G, output run g seeing input run g only (G = C: depthwise). Padding is TensorFlow's, on the "
      "dilated window's span KH' = (KH - 1) * dilation + 1: valid pads nothing, OH = (H - KH') / stride "
      "+ 1 and the window must fit in the input; same gives OH = ceil(H / stride) and pads max((OH - 1) "
      "* stride + KH' - H, 0) zeros in total, the odd one at the bottom (right). x and w have one "
      "floating-point dtype (f32 or f64); C must be groups times w's third extent and O a multiple of "
      "groups, and the filter window must not be empty (shape errors otherwise). The sums are Eigen "
      "GEMMs over im2col rows (the order of addition is Eigen's); NaN and Inf propagate as in any sum "
      "of products, and a padded zero times an infinite weight gives NaN. In C++, conv2d<Stride, "
      "Padding, Dilation, Groups>(x, w) (defaults 1, padding::valid, 1, 1). Gradient: "
      "conv2d_backprop_input(g, w, like x) for x, conv2d_backprop_filter(x, g, like w) for w, with "
      "the same attributes. Example: x = 1..9 as [1, 3, 3, 1] and w = ones [2, 2, 1, 1], stride 1, "
      "valid padding, give [[12, 16], [24, 28]] as [1, 2, 2, 1]; with dilation 2 and same padding, "
      "[[5, 10, 5], [10, 20, 10], [5, 10, 5]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 6, 5, 4>, true>, law::floating<shape<3, 2, 2, 6>, true>>;
    template <class T>
    static auto of(const auto& x, const auto& w) { return conv2d<1, padding::same, 2, 2>(x, w); }
  };
  template <class X, class W>
  using result_type = X;
  template <class X, class W>
  static constexpr bool accepts = conv_detail::one_floating_dtype<X, W>;  // dtype rule (ir/op_registry.hpp)
  template <class SX, class SW>
  static constexpr bool shapes_ok = conv_detail::static_shapes_fit<SX, SW, Stride, Padding, Dilation, Groups>();
  template <class SX, class SW>
  using result_shape = shape_from_array_t<conv_detail::static_result<SX, SW, Stride, Padding, Dilation>()>;

  static extents_t<4> infer_extents(const auto& who, const extents_t<4>& x, const extents_t<4>& w) {
    return conv_detail::checked_geometry(who, x, w, conv2d_op::settings).output_extents();
  }
  template <class T, class Out, class X, class W>
  static void run_cpu(const Out& out, const X& x, const W& w) {
    conv_detail::forward<T>(conv_detail::checked_geometry("conv2d", x.extents(), w.extents(), conv2d_op::settings), x.data(),
                            w.data(), out.data());
  }
  // dX = conv2d_backprop_input(g, w, like x), dW = conv2d_backprop_filter(x, g, like w).
  // Derivative rule (expr/derivative_rule.hpp): both adjoints are convolutions of the family.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto& x, const auto& w) {
    return std::tuple{apply_kernel(sibling<conv2d_backprop_input_op>(self), g, w, x),
                      apply_kernel(sibling<conv2d_backprop_filter_op>(self), x, g, w)};
  }
  // Bilinear: d conv(x, w) = conv(dx, w) + conv(x, dw).
  template <class Y, class TX, class TW, class X, class W>
  static auto tangent(const Y&, const TX& tx, const TW& tw, const X& x, const W& w) {
    return conv_detail::sum_present(
        [&] {
          if constexpr (is_no_gradient_v<TX>) return no_gradient{};
          else return conv2d<Stride, Padding, Dilation, Groups>(tx, w);
        }(),
        [&] {
          if constexpr (is_no_gradient_v<TW>) return no_gradient{};
          else return conv2d<Stride, Padding, Dilation, Groups>(x, tw);
        }());
  }

  // Runtime forms (graph interpreter, builder, differentiation): stride and padding are values.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 2, who);
    const auto e = conv_detail::runtime_geometry(a, in[0], in[1], who).output_extents();
    return runtime_extents(e.begin(), e.end());
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto g = conv_detail::runtime_geometry(a, in[0].extents, in[1].extents, std::string(name));
    conv_detail::with_float_element(out.type, name, [&](auto t) {
      using T = decltype(t);
      conv_detail::forward<T>(g, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), out.as<T>());
    });
  }
};
}  // namespace ops

// 2-D convolution, NHWC input [N,H,W,C] with an HWIO filter [KH,KW,C/Groups,O], the same stride and
// dilation along both spatial axes, TensorFlow's `valid` or `same` padding: conv2d<1, padding::same>(x,
// w); a 3x3 depthwise convolution of 32 channels with dilation 2: conv2d<1, padding::same, 2, 32>(x, w)
// with w [3, 3, 1, 32].
template <std::size_t Stride = 1, padding Padding = padding::valid, std::size_t Dilation = 1, std::size_t Groups = 1,
          expression X, expression W>
auto conv2d(const X& x, const W& w, source_site where = source_site::current()) {
  detail::check_conv_operands<X, W>();
  return make_kernel(ops::conv2d_op<Stride, Padding, Dilation, Groups>{}, where, x, w);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_CONV2D_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, conv2d_op<1, padding::same>)
#endif
