#ifndef SYMFLOW_OPS_CONV2D_BACKPROP_FILTER_HPP
#define SYMFLOW_OPS_CONV2D_BACKPROP_FILTER_HPP
// conv2d_backprop_filter: the adjoint of conv2d with respect to its filter, a kernel op of its own (the
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
// Its gradient and tangent are written with conv2d and conv2d_backprop_input.
#include "conv2d.hpp"
#include "law_example.hpp"

namespace symflow {
namespace ops {
namespace conv_detail {

// dW = sum over images of im2col(X)^T dY, group by group (group g writes its block of dW's columns).
template <class T>
void backprop_filter(const geometry& g, const T* x, const T* dy, T* dw) {
  if (is_depthwise(g)) return depthwise_backprop_filter(g, x, dy, dw);
  const std::size_t patch = g.patch(), rows = g.pixels(), size = patch * g.filters;
  if (patch == 0 || rows == 0 || g.group_filters() == 0) {
    std::fill_n(dw, size, T(0));
    return;
  }
  // Adds chunk k's products to sum (patch x filters).
  const chunking c(g);
  const auto add_chunk = [&](std::size_t k, T* sum, T* col) {
    const std::size_t n0 = c.first(k), count = c.size(k);
    for (std::size_t group = 0; group < g.groups; ++group) {
      im2col(g, x, n0, count, group, col);
      Eigen::Map<const row_major<T>> cm(col, Eigen::Index(count * rows), Eigen::Index(patch));
      group_block(sum, patch, g.group_filters(), g.filters, group).noalias() +=
          cm.transpose() * group_block(dy + n0 * rows * g.filters, count * rows, g.group_filters(), g.filters, group);
    }
  };
  // The chunks in `slices` runs, each summed on one thread into a partial of its own, the partials
  // then added in order: the number of slices depends on the batch only, so the result does not
  // depend on the thread count.
  const std::size_t slices = std::min<std::size_t>(c.count, 8);
  const std::size_t entries = c.images * rows * patch;
  if (slices == 1) {
    std::fill_n(dw, size, T(0));
    run_tasks(1, c.work, [&](std::size_t) { add_chunk(0, dw, column_buffer<T>(entries)); });
    return;
  }
  struct partial_sums;
  T* const partial = thread_buffer<T, partial_sums>(slices * size);
  run_tasks(slices, c.work, [&](std::size_t s) {
    T* const sum = partial + s * size;
    std::fill_n(sum, size, T(0));
    for (std::size_t k = s * c.count / slices; k < (s + 1) * c.count / slices; ++k)
      add_chunk(k, sum, column_buffer<T>(entries));
  });
  Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> out(dw, Eigen::Index(size));
  out = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(partial, Eigen::Index(size));
  for (std::size_t s = 1; s < slices; ++s)
    out += Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(partial + s * size, Eigen::Index(size));
}
}  // namespace conv_detail

// conv2d_backprop_filter(x [N,H,W,C], g [N,OH,OW,O], like w [KH,KW,C,O]) -> [KH,KW,C,O]: the adjoint
// of conv2d with respect to its filter; `like` supplies the filter's extents only.
template <std::size_t Stride, padding Padding, std::size_t Dilation, std::size_t Groups>
struct conv2d_backprop_filter_op : conv2d_attributes<Stride, Padding, Dilation, Groups> {
  static constexpr std::string_view name = "conv2d_backprop_filter";
  static constexpr std::string_view doc =
      "conv2d_backprop_filter(x, g, like), attributes stride, same_padding, dilation and groups (as "
      "conv2d's): the adjoint of conv2d(x, w) with respect to w, for the adjoint g [N, OH, OW, O] of "
      "its result; like has w's shape [KH, KW, C/groups, O] and only its extents are read. dw[kh, kw, "
      "c, o] = sum over n, i, j of x[n, i*stride + kh*dilation - pad_top, j*stride + kw*dilation - "
      "pad_left, group(o)*C/groups + c] * g[n, i, j, o], positions outside the input reading 0. Shape, "
      "dtype and padding rules are conv2d's, and g must have the extents conv2d gives for x and like. "
      "The sums are Eigen GEMMs over im2col rows, accumulated chunk of images by chunk; NaN and Inf "
      "propagate as in sums of products. Gradient: conv2d_backprop_input(g, a, like x) for x, "
      "conv2d(x, a) for g, none for like. Example: x = 1..9 as [1, 3, 3, 1], g = ones [1, 2, 2, 1] and "
      "like of shape [2, 2, 1, 1], stride 1, valid padding, give [[12, 16], [24, 28]] as [2, 2, 1, 1].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 5, 5, 3>, true>, law::floating<shape<2, 3, 3, 6>, true>, law::floating<shape<3, 3, 1, 6>, true>>;
    template <class T>
    static auto of(const auto& x, const auto& g, const auto& w) { return conv2d_backprop_filter<1, padding::valid, 1, 3>(x, g, w); }
  };
  template <class X, class G, class W>
  using result_type = X;
  template <class X, class G, class W>  // dtype rule (ir/op_registry.hpp); like: any dtype
  static constexpr bool accepts = conv_detail::one_floating_dtype<X, G>;
  template <std::size_t I>
  static constexpr bool reads_operand = I != 2;
  template <class SX, class SG, class SW>
  static constexpr bool shapes_ok = conv_detail::adjoint_shapes_fit<SX, SW, SG, Stride, Padding, Dilation, Groups>();
  template <class SX, class SG, class SW>
  using result_shape = SW;

  static extents_t<4> infer_extents(const auto& who, const extents_t<4>& x, const extents_t<4>& g, const extents_t<4>& w) {
    const auto geo = conv_detail::checked_geometry(who, x, w, conv2d_backprop_filter_op::settings);
    conv_detail::check_adjoint_extents(who, g, geo.output_extents(), "conv2d's result");
    return w;
  }
  template <class T, class Out, class X, class G, class W>
  static void run_cpu(const Out& out, const X& x, const G& g, const W&) {
    conv_detail::backprop_filter<T>(conv_detail::checked_geometry("conv2d_backprop_filter", x.extents(), out.extents(), conv2d_backprop_filter_op::settings),
                                    x.data(), g.data(), out.data());
  }
  // <A, bpf(X, G)> = <conv2d(X, A), G>: so dX = conv2d_backprop_input(G, A) and dG = conv2d(X, A).
  // Derivative rule (expr/derivative_rule.hpp): linear in x and in g, so both adjoints are
  // convolutions of the family; w supplies extents only.
  static auto derivative(const auto& self, const auto& a, const auto&, const auto& x, const auto& g, const auto&) {
    return std::tuple{apply_kernel(sibling<conv2d_backprop_input_op>(self), g, a, x), apply_kernel(sibling<conv2d_op>(self), x, a),
                      no_gradient{}};
  }
  template <class Y, class TX, class TG, class TW, class X, class G, class W>
  static auto tangent(const Y&, const TX& tx, const TG& tg, const TW&, const X& x, const G& g, const W& w) {
    return conv_detail::sum_present(
        [&] {
          if constexpr (is_no_gradient_v<TX>) return no_gradient{};
          else return conv2d_backprop_filter<Stride, Padding, Dilation, Groups>(tx, g, w);
        }(),
        [&] {
          if constexpr (is_no_gradient_v<TG>) return no_gradient{};
          else return conv2d_backprop_filter<Stride, Padding, Dilation, Groups>(x, tg, w);
        }());
  }

  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 3, who);
    const auto geo = conv_detail::runtime_geometry(a, in[0], in[2], who);
    conv_detail::check_adjoint_extents(who, in[1], geo.output_extents(), "conv2d's result");
    return in[2];
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto geo = conv_detail::runtime_geometry(a, in[0].extents, in[2].extents, std::string(name));
    conv_detail::with_float_element(out.type, name, [&](auto t) {
      using T = decltype(t);
      conv_detail::backprop_filter<T>(geo, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), out.as<T>());
    });
  }
};
}  // namespace ops

// The adjoint of conv2d<Stride, Padding, Dilation, Groups>(x, w) with respect to w, for the adjoint g of its result; `like`
// has w's shape (only its extents are read).
template <std::size_t Stride = 1, padding Padding = padding::valid, std::size_t Dilation = 1, std::size_t Groups = 1,
          expression X, expression G, expression W>
auto conv2d_backprop_filter(const X& x, const G& g, const W& like, source_site where = source_site::current()) {
  detail::check_conv_operands<X, G>();
  return make_kernel(ops::conv2d_backprop_filter_op<Stride, Padding, Dilation, Groups>{}, where, x, g, like);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_CONV2D_BACKPROP_FILTER_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, conv2d_backprop_filter_op<1, padding::same>)
#endif
