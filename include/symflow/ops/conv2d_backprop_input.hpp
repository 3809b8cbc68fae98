#ifndef SYMFLOW_OPS_CONV2D_BACKPROP_INPUT_HPP
#define SYMFLOW_OPS_CONV2D_BACKPROP_INPUT_HPP
// conv2d_backprop_input: the adjoint of conv2d with respect to its input, a kernel op of its own (the
// gradient of conv2d, and of itself). Layout, padding and geometry: conv2d_geometry.hpp.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include "../core/eigen.hpp"

#include "conv2d_columns.hpp"
#include "conv2d_depthwise.hpp"
#include "conv2d_geometry.hpp"
// Its gradient and tangent are written with conv2d and conv2d_backprop_filter.
#include "conv2d.hpp"
#include "law_example.hpp"

namespace symflow {
namespace ops {
namespace conv_detail {

// dX = col2im(dY W^T), group by group.
template <class T>
void backprop_input(const geometry& g, const T* dy, const T* w, T* dx) {
  if (is_depthwise(g)) return depthwise_backprop_input(g, dy, w, dx);
  const std::size_t patch = g.patch(), rows = g.pixels();
  if (patch == 0 || rows == 0 || g.group_filters() == 0) {
    std::fill_n(dx, g.batch * g.input_image(), T(0));
    return;
  }
  for_each_chunk<T>(g, [&](std::size_t n0, std::size_t count, T* col) {
    std::fill_n(dx + n0 * g.input_image(), count * g.input_image(), T(0));  // the chunk's images only
    for (std::size_t group = 0; group < g.groups; ++group) {
      Eigen::Map<row_major<T>> cm(col, Eigen::Index(count * rows), Eigen::Index(patch));
      cm.noalias() = group_block(dy + n0 * rows * g.filters, count * rows, g.group_filters(), g.filters, group) *
                     group_block(w, patch, g.group_filters(), g.filters, group).transpose();
      col2im_add(g, col, n0, count, group, dx);
    }
  });
}
}  // namespace conv_detail

// conv2d_backprop_input(g [N,OH,OW,O], w, like x [N,H,W,C]) -> [N,H,W,C]: the adjoint of conv2d with
// respect to its input. `like` supplies the input's extents only (several inputs give one output size).
template <std::size_t Stride, padding Padding, std::size_t Dilation, std::size_t Groups>
struct conv2d_backprop_input_op : conv2d_attributes<Stride, Padding, Dilation, Groups> {
  static constexpr std::string_view name = "conv2d_backprop_input";
  static constexpr std::string_view doc =
      "conv2d_backprop_input(g, w, like), attributes stride, same_padding, dilation and groups (as "
      "conv2d's): the adjoint of conv2d(x, w) with respect to x, for the adjoint g [N, OH, OW, O] of "
      "its result; like has x's shape [N, H, W, C] and only its extents are read (several input sizes "
      "give one output size). dx[n, r, s, c] is the sum of g[n, i, j, o] * w[kh, kw, c mod C/groups, "
      "o] over the outputs (i, j) whose dilated window covers input (r, s) at filter position (kh, kw) "
      "and the o of c's group; inputs no window covers get 0. g must have the extents conv2d gives for "
      "like and w (a shape error otherwise); g and w have one floating-point dtype (f32 or f64). "
      "Computed as one GEMM per group, g w^T, and a scatter-add of its rows, so NaN and Inf propagate "
      "as in sums of products. Gradient: conv2d(a, w) for g, conv2d_backprop_filter(a, g, like w) for "
      "w, none for like. Example: g = ones [1, 2, 2, 1], w = ones [2, 2, 1, 1] and like of shape [1, 3, "
      "3, 1], stride 1, valid padding, give [[1, 2, 1], [2, 4, 2], [1, 2, 1]] as [1, 3, 3, 1].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 3, 3, 4>, true>, law::floating<shape<2, 2, 3, 4>, true>, law::floating<shape<2, 5, 5, 3>, true>>;
    template <class T>
    static auto of(const auto& g, const auto& w, const auto& x) { return conv2d_backprop_input<2, padding::same, 2>(g, w, x); }
  };
  template <class G, class W, class X>
  using result_type = G;
  template <class G, class W, class X>  // dtype rule (ir/op_registry.hpp); like: any dtype
  static constexpr bool accepts = conv_detail::one_floating_dtype<G, W>;
  template <std::size_t I>
  static constexpr bool reads_operand = I != 2;
  template <class SG, class SW, class SX>
  static constexpr bool shapes_ok = conv_detail::adjoint_shapes_fit<SX, SW, SG, Stride, Padding, Dilation, Groups>();
  template <class SG, class SW, class SX>
  using result_shape = SX;

  static extents_t<4> infer_extents(const auto& who, const extents_t<4>& g, const extents_t<4>& w, const extents_t<4>& x) {
    const auto geo = conv_detail::checked_geometry(who, x, w, conv2d_backprop_input_op::settings);
    conv_detail::check_adjoint_extents(who, g, geo.output_extents(), "conv2d's result");
    return x;
  }
  template <class T, class Out, class G, class W, class X>
  static void run_cpu(const Out& out, const G& g, const W& w, const X&) {
    conv_detail::backprop_input<T>(conv_detail::checked_geometry("conv2d_backprop_input", out.extents(), w.extents(), conv2d_backprop_input_op::settings),
                                   g.data(), w.data(), out.data());
  }
  // <A, bpi(G, W)> = <conv2d(A, W), G>: so dG = conv2d(A, W) and dW = conv2d_backprop_filter(A, G).
  // Derivative rule (expr/derivative_rule.hpp): linear in g and in w, so both adjoints are
  // convolutions of the family; x supplies extents only.
  static auto derivative(const auto& self, const auto& a, const auto&, const auto& g, const auto& w, const auto&) {
    return std::tuple{apply_kernel(sibling<conv2d_op>(self), a, w), apply_kernel(sibling<conv2d_backprop_filter_op>(self), a, g, w),
                      no_gradient{}};
  }
  template <class Y, class TG, class TW, class TX, class G, class W, class X>
  static auto tangent(const Y&, const TG& tg, const TW& tw, const TX&, const G& g, const W& w, const X& x) {
    return conv_detail::sum_present(
        [&] {
          if constexpr (is_no_gradient_v<TG>) return no_gradient{};
          else return conv2d_backprop_input<Stride, Padding, Dilation, Groups>(tg, w, x);
        }(),
        [&] {
          if constexpr (is_no_gradient_v<TW>) return no_gradient{};
          else return conv2d_backprop_input<Stride, Padding, Dilation, Groups>(g, tw, x);
        }());
  }

  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 3, who);
    const auto geo = conv_detail::runtime_geometry(a, in[2], in[1], who);
    conv_detail::check_adjoint_extents(who, in[0], geo.output_extents(), "conv2d's result");
    return in[2];
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto geo = conv_detail::runtime_geometry(a, in[2].extents, in[1].extents, std::string(name));
    conv_detail::with_float_element(out.type, name, [&](auto t) {
      using T = decltype(t);
      conv_detail::backprop_input<T>(geo, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), out.as<T>());
    });
  }
};
}  // namespace ops

// The adjoint of conv2d<Stride, Padding, Dilation, Groups>(x, w) with respect to x, for the adjoint g of its result; `like`
// has x's shape (only its extents are read).
template <std::size_t Stride = 1, padding Padding = padding::valid, std::size_t Dilation = 1, std::size_t Groups = 1,
          expression G, expression W, expression X>
auto conv2d_backprop_input(const G& g, const W& w, const X& like, source_site where = source_site::current()) {
  detail::check_conv_operands<G, W>();
  return make_kernel(ops::conv2d_backprop_input_op<Stride, Padding, Dilation, Groups>{}, where, g, w, like);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_CONV2D_BACKPROP_INPUT_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, conv2d_backprop_input_op<1, padding::same>)
#endif
