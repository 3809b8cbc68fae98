#ifndef SYMFLOW_OPS_POOL2D_HPP
#define SYMFLOW_OPS_POOL2D_HPP
// 2-D max and average pooling over NHWC [N,H,W,C]: a window of KH x KW moved by (SH, SW), with
// optional padding, ceil rounding and (average) padding counted in the divisor, as PyTorch's
// MaxPool2d/AvgPool2d and ONNX's MaxPool/AveragePool; geometry and kernels in pool2d_geometry.hpp.
// Each has a backward kernel op for its adjoint. 1-D pooling is composed of these (pool1d.hpp).
//
// Max-pool ties: the adjoint of a window goes to its first maximum in window order (row by row,
// then column by column), the element a strict `>` scan keeps; other backends must scan the same way.
#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../core/tensor.hpp"
#include "../expr/derivative_rule.hpp"
#include "../expr/leaves.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"
#include "law_example.hpp"
#include "pool2d_geometry.hpp"
#include "pool2d_onnx.hpp"

namespace symflow {
namespace ops {
namespace pool_detail {
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O, std::size_t DH, std::size_t DW>
inline constexpr settings static_settings{{KH, KW},
                                          {SH, SW},
                                          {DH, DW},
                                          {PH, PW, PH, PW},
                                          has_option(O, pool_options::ceil_mode),
                                          has_option(O, pool_options::count_include_pad)};

// Whether x's static extents fit the pooling (dyn extents are checked at run time): the window
// fits in the padded input and every window reads an input element.
template <class S, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O, std::size_t DH, std::size_t DW>
consteval bool static_shape_fits() {
  if constexpr (S::rank != 4) {
    return false;
  } else {
    constexpr const settings& s = static_settings<KH, KW, SH, SW, PH, PW, O, DH, DW>;
    for (std::size_t a = 0; a < 2; ++a) {
      if (S::extents[1 + a] == dyn) continue;
      axis_geometry ax{S::extents[1 + a], s.window[a], s.stride[a], s.pads[a], s.pads[2 + a], 0, s.dilation[a]};
      ax.out = output_extent(ax.in, ax.span(), ax.stride, ax.before, ax.after, s.ceil_mode);
      if (ax.out == 0 || !every_window_reads_input(ax)) return false;
    }
    return true;
  }
}
template <class S, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O, std::size_t DH, std::size_t DW>
consteval std::array<std::size_t, 4> static_result() {
  if constexpr (!static_shape_fits<S, KH, KW, SH, SW, PH, PW, O, DH, DW>()) {
    return {dyn, dyn, dyn, dyn};  // probed by op_registry.hpp with shapes that do not fit
  } else {
    constexpr auto x = S::extents;
    constexpr bool ceil = has_option(O, pool_options::ceil_mode);
    return {x[0], static_output_extent(x[1], (KH - 1) * DH + 1, SH, PH, PH, ceil),
            static_output_extent(x[2], (KW - 1) * DW + 1, SW, PW, PW, ceil), x[3]};
  }
}
template <class SG, class SX, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O, std::size_t DH, std::size_t DW>
consteval bool static_adjoint_fits() {
  if constexpr (!static_shape_fits<SX, KH, KW, SH, SW, PH, PW, O, DH, DW>() || SG::rank != 4) {
    return false;
  } else {
    constexpr auto want = static_result<SX, KH, KW, SH, SW, PH, PW, O, DH, DW>();
    for (std::size_t i = 0; i < 4; ++i)
      if (!conv_detail::compatible(SG::extents[i], want[i])) return false;
    return true;
  }
}

// What distinguishes max from average pooling in the rules the two share below.
struct max_pooling {
  static constexpr std::string_view name = "max_pool2d", backward_name = "max_pool2d_backward";
  static constexpr const char* result = "max_pool2d's result";
  static constexpr std::string_view onnx_op = "MaxPool";
  static constexpr bool averages = false;
  template <class T>
  static void forward(const geometry& g, const T* x, T* y) {
    max_forward<T>(g, x, y);
  }
};
struct avg_pooling {
  static constexpr std::string_view name = "avg_pool2d", backward_name = "avg_pool2d_backward";
  static constexpr const char* result = "avg_pool2d's result";
  static constexpr std::string_view onnx_op = "AveragePool";
  static constexpr bool averages = true;
  template <class T>
  static void forward(const geometry& g, const T* x, T* y) {
    avg_forward<T>(g, x, y);
  }
};
}  // namespace pool_detail

// The attributes of a pooling op: window [KH, KW], stride [SH, SW], pads [top, left, bottom,
// right] (the typed ops pad both sides of an axis alike; a graph may pad them differently),
// dilation [DH, DW], ceil_mode, and for average pooling count_include_pad.
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O, std::size_t DH, std::size_t DW, class Pooling>
struct pool2d_attributes {
  static_assert(KH > 0 && KW > 0 && SH > 0 && SW > 0, "symflow: a pooling window and stride must be at least 1");
  static_assert(DH > 0 && DW > 0, "symflow: a pooling dilation must be at least 1");
  static_assert(PH < (KH - 1) * DH + 1 && PW < (KW - 1) * DW + 1, "symflow: a pooling pad must be smaller than the window");
  static constexpr bool contiguous_operands = true;
  // Graph files written before padding (dilation) existed have none of these: no padding, floor
  // rounding, no dilation.
  static constexpr std::array<std::string_view, 4> optional_attributes{"pads", "dilation", "ceil_mode", "count_include_pad"};
  template <class V>
  static void visit_attributes(V&& v) {
    v("window", std::array<std::size_t, 2>{KH, KW});
    v("stride", std::array<std::size_t, 2>{SH, SW});
    v("pads", std::array<std::size_t, 4>{PH, PW, PH, PW});
    v("dilation", std::array<std::size_t, 2>{DH, DW});
    v("ceil_mode", has_option(O, pool_options::ceil_mode));
    if constexpr (Pooling::averages) v("count_include_pad", has_option(O, pool_options::count_include_pad));
  }
  static constexpr const pool_detail::settings& settings = pool_detail::static_settings<KH, KW, SH, SW, PH, PW, O, DH, DW>;
};

// Pooling ops with one operand x, or with (g, x) for the adjoint.
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O, std::size_t DH, std::size_t DW, class Pooling>
struct pool2d_shape_rules : pool2d_attributes<KH, KW, SH, SW, PH, PW, O, DH, DW, Pooling> {
  template <class X, class... Rest>
  using result_type = X;
  template <class X, class... Rest>  // dtype rule (ir/op_registry.hpp): one floating-point dtype
  static constexpr bool accepts = std::is_floating_point_v<X> && (std::is_same_v<X, Rest> && ...);
};

// Forward pooling x [N,H,W,C] -> [N,OH,OW,C]: the window's geometry, checks and kernels at compile
// time and in the interpreter; the op adds its derivative rule.
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O, std::size_t DH, std::size_t DW, class Pooling>
struct pool2d_forward_rules : pool2d_shape_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, Pooling> {
  using base = pool2d_shape_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, Pooling>;
  static constexpr std::string_view name = Pooling::name;
  // ONNX MaxPool / AveragePool, both ways (pool2d_onnx.hpp). max_pool2d_indices shares these rules
  // but has no form: ONNX's indices count over the whole NCHW tensor, its own within one image and
  // channel.
  static void write_onnx(onnx_node_writer& w)
    requires(!Pooling::onnx_op.empty())
  {
    pool_detail::write_onnx<Pooling>(w);
  }
  static constexpr std::array<std::string_view, 1> onnx_reads{Pooling::onnx_op};
  static void read_onnx(onnx_node_reader& r)
    requires(!Pooling::onnx_op.empty())
  {
    pool_detail::read_onnx<Pooling>(r, name);
  }
  template <class S>
  static constexpr bool shapes_ok = pool_detail::static_shape_fits<S, KH, KW, SH, SW, PH, PW, O, DH, DW>();
  template <class S>
  using result_shape = shape_from_array_t<pool_detail::static_result<S, KH, KW, SH, SW, PH, PW, O, DH, DW>()>;
  static extents_t<4> infer_extents(const auto& who, const extents_t<4>& x) {
    return pool_detail::checked_geometry(who, name, x, base::settings).output_extents();
  }
  template <class T, class Out, class X>
  static void run_cpu(const Out& out, const X& x) {
    Pooling::template forward<T>(pool_detail::checked_geometry(name, name, x.extents(), base::settings), x.data(), out.data());
  }
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 1, who);
    const auto e = pool_detail::runtime_geometry(a, name, in[0], who).output_extents();
    return runtime_extents(e.begin(), e.end());
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto geo = pool_detail::runtime_geometry(a, name, in[0].extents, std::string(name));
    conv_detail::with_float_element(out.type, name, [&](auto t) {
      using T = decltype(t);
      Pooling::template forward<T>(geo, static_cast<const T*>(in[0].data), out.as<T>());
    });
  }
};

// The adjoint of pooling, (g [N,OH,OW,C], x [N,H,W,C]) -> [N,H,W,C]: g must have the extents the
// forward op gives x.
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O, std::size_t DH, std::size_t DW, class Pooling>
struct pool2d_backward_rules : pool2d_shape_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, Pooling> {
  using base = pool2d_shape_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, Pooling>;
  static constexpr std::string_view name = Pooling::backward_name;
  template <class SG, class SX>
  static constexpr bool shapes_ok = pool_detail::static_adjoint_fits<SG, SX, KH, KW, SH, SW, PH, PW, O, DH, DW>();
  template <class SG, class SX>
  using result_shape = SX;
  static pool_detail::geometry checked(const auto& who, const auto& x) {
    return pool_detail::checked_geometry(who, name, x, base::settings);
  }
  static extents_t<4> infer_extents(const auto& who, const extents_t<4>& g, const extents_t<4>& x) {
    conv_detail::check_adjoint_extents(who, g, checked(who, x).output_extents(), Pooling::result);
    return x;
  }
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 2, who);
    conv_detail::check_adjoint_extents(who, in[0], pool_detail::runtime_geometry(a, name, in[1], who).output_extents(),
                                       Pooling::result);
    return in[1];
  }
};

// The adjoints of pooling, below.
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O,
          std::size_t DH = 1, std::size_t DW = 1>
struct max_pool2d_backward_op;
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O,
          std::size_t DH = 1, std::size_t DW = 1>
struct avg_pool2d_backward_op;

template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O,
          std::size_t DH = 1, std::size_t DW = 1>
struct max_pool2d_op : pool2d_forward_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, pool_detail::max_pooling> {
  static constexpr std::string_view doc =
      "max_pool2d(x), attributes window [KH, KW], stride [SH, SW], pads [top, left, bottom, right], "
      "dilation [DH, DW] (default [1, 1]) and ceil_mode (in C++ max_pool2d<Window, Stride = Window, "
      "Pad = 0, Options = pool_options::none, Dilation = 1>(x) with square windows, equal pads and one "
      "dilation, pool_options::ceil_mode to round up; max_pool1d for [N, L, C]): the maximum of each "
      "KH x KW window of an NHWC input x [N, H, W, C], per channel, its positions DH (DW) apart, moved "
      "by the stride, as torch.nn.MaxPool2d and ONNX MaxPool: [N, OH, OW, C] with OH = floor((H + top "
      "+ bottom - KH') / SH) + 1 where KH' = (KH - 1) * DH + 1, with ceil_mode rounded up unless that "
      "last window would start in the bottom padding. Padding is never read (the maximum is over the "
      "window's elements inside x); each pad must be smaller than KH' (KW'), the window must fit in the "
      "padded input and every window must hold an element of x (a shape error otherwise). f32 or f64. Each window is scanned row by row and an element replaces the "
      "running maximum only when it is strictly greater, so ties keep the first maximum (-0 then +0 "
      "gives -0), and NaN is the result only when it is the window's first element: a NaN further on "
      "is never greater and is skipped. Gradient: max_pool2d_backward(g, x), which routes g to each "
      "window's first maximum. Example: window 2, stride 2 of x = [[1, 3], [2, 0]] (as [1, 2, 2, 1]) "
      "is [[3]] (as [1, 1, 1, 1]); with pads 1 on every side and stride 2 it is [[1, 3], [2, 0]]; window "
      "[1, 2] with dilation [1, 2] of the row [1, 5, 2, 4, 3] (as [1, 1, 5, 1]) and stride 1 is [2, 5, 3].";
  // The law tests' instance of this op (ops/law_example.hpp): padded and rounded up.
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 6, 5, 3>>>;
    template <class T>
    static auto of(const auto& x) { return max_pool2d<3, 2, 1, pool_options::ceil_mode>(x); }
  };
  // Derivative rule (expr/derivative_rule.hpp): g routed back by the backward op of the family.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto& x) {
    return tuple_of(apply_kernel(sibling<max_pool2d_backward_op>(self), g, x));
  }
};

// max_pool2d_backward(g, x): g routed to each window's first maximum of x (recomputed here rather
// than stored by the forward pass).
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O, std::size_t DH, std::size_t DW>
struct max_pool2d_backward_op : pool2d_backward_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, pool_detail::max_pooling> {
  static constexpr std::string_view doc =
      "max_pool2d_backward(g, x), attributes as max_pool2d's: the adjoint of max_pool2d(x), a tensor "
      "of x's shape that is zero except that each g[n, i, j, c] is added at the first maximum of its "
      "window of x, found by max_pool2d's strict scan over the window's elements inside x (a window "
      "led by a NaN sends it to that NaN); overlapping windows add up. g must have the extents "
      "max_pool2d gives x (a shape error otherwise); f32 or f64. Second derivatives through "
      "max-pooling are refused (a compile-time error in C++, a value error in graph "
      "differentiation). Example: window 2 with g = [[5]] and x = [[1, 3], [2, 0]] gives [[0, 5], [0, "
      "0]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 4, 3, 3>>, law::floating<shape<2, 6, 5, 3>>>;
    static constexpr bool differentiable = false;  // second derivatives are refused
    template <class T>
    static auto of(const auto& g, const auto& x) { return max_pool2d_backward<3, 2, 1, pool_options::ceil_mode>(g, x); }
  };
  using rules = pool2d_backward_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, pool_detail::max_pooling>;
  template <class T, class Out, class G, class X>
  static void run_cpu(const Out& out, const G& g, const X& x) {
    pool_detail::max_backward<T>(rules::checked(rules::name, x.extents()), g.data(), x.data(), out.data());
  }
  // The result is linear in g (a gather would be its adjoint) and piecewise constant in x; neither
  // rule exists yet, so second derivatives through max-pooling are refused rather than wrong.
  template <class Self>
  static auto derivative(const Self&, const auto&, const auto&, const auto&, const auto&) {
    static_assert(!rule_on_types_v<Self>, "symflow: second derivatives through max_pool2d are not supported");
    throw value_error("differentiate: second derivatives through max_pool2d are not supported");
    return tuple_of(no_gradient{}, no_gradient{});
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto geo = pool_detail::runtime_geometry(a, rules::name, in[1].extents, std::string(rules::name));
    conv_detail::with_float_element(out.type, rules::name, [&](auto t) {
      using T = decltype(t);
      pool_detail::max_backward<T>(geo, static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data), out.as<T>());
    });
  }
};

template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O,
          std::size_t DH = 1, std::size_t DW = 1>
struct avg_pool2d_op : pool2d_forward_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, pool_detail::avg_pooling> {
  static constexpr std::string_view doc =
      "avg_pool2d(x), attributes window [KH, KW], stride [SH, SW], pads [top, left, bottom, right], "
      "dilation [DH, DW] (default [1, 1]), ceil_mode and count_include_pad (in C++ avg_pool2d<Window, "
      "Stride = Window, Pad = 0, Options = pool_options::none, Dilation = 1>(x) with square windows and "
      "equal pads, Options pool_options::ceil_mode | pool_options::count_include_pad; avg_pool1d for "
      "[N, L, C]): the mean of each KH x KW window of an NHWC input x [N, H, W, C], per channel, its "
      "positions DH (DW) apart, moved by the stride, as torch.nn.AvgPool2d and ONNX AveragePool "
      "(dilations from opset 19), with max_pool2d's output extents and limits. The sum runs over the "
      "window's elements inside x; it is divided by their count, or with count_include_pad by the "
      "count of the window's positions inside the padded input (PyTorch's default, ONNX's "
      "count_include_pad=1; positions past the padding, which ceil_mode can add, never count). f32 or f64: the sum is "
      "accumulated in the element type, row by row, then divided, so a NaN, or +Inf together with "
      "-Inf, in a window gives NaN, and an Inf alone gives that Inf. Gradient: avg_pool2d_backward(g, "
      "like x). Example: window 2 of x = [[1, 3], [2, 0]] (as [1, 2, 2, 1]) is [[1.5]]; window 2, "
      "stride 1, pads 1 of x = [[4]] is [[4, 4], [4, 4]], or with count_include_pad [[1, 1], [1, 1]].";
  // The law tests' instance of this op (ops/law_example.hpp): padded, padding counted, rounded up.
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 6, 5, 3>>>;
    template <class T>
    static auto of(const auto& x) {
      return avg_pool2d<3, 2, 1, pool_options::ceil_mode | pool_options::count_include_pad>(x);
    }
  };
  // Derivative rule (expr/derivative_rule.hpp): g spread back by the backward op of the family.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto& x) {
    return tuple_of(apply_kernel(sibling<avg_pool2d_backward_op>(self), g, x));
  }
  template <class Y, class TX, class X>
  static auto tangent(const Y&, const TX& tx, const X&) {
    if constexpr (is_no_gradient_v<TX>) return no_gradient{};
    else return make_kernel(avg_pool2d_op{}, source_site{}, tx);
  }
};

// avg_pool2d_backward(g, like x): each g spread over its window's input elements, divided by the
// forward's count; `like` supplies extents only.
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O, std::size_t DH, std::size_t DW>
struct avg_pool2d_backward_op : pool2d_backward_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, pool_detail::avg_pooling> {
  static constexpr std::string_view doc =
      "avg_pool2d_backward(g, like), attributes as avg_pool2d's: the adjoint of avg_pool2d, a tensor "
      "of like's shape (like's values are never read) in which g[n, i, j, c] divided by the count "
      "avg_pool2d divided that window's sum by is added to every element of its window inside like; "
      "overlapping windows add up and positions no window covers are 0. g must have the extents "
      "avg_pool2d gives like (a shape error otherwise); f32 or f64. Linear in g: its gradient is "
      "avg_pool2d of the adjoint for g, none for like. Example: window 2 with g = [[4]] gives [[1, "
      "1], [1, 1]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 4, 3, 3>>, law::floating<shape<2, 6, 5, 3>>>;
    template <class T>
    static auto of(const auto& g, const auto& x) {
      return avg_pool2d_backward<3, 2, 1, pool_options::ceil_mode | pool_options::count_include_pad>(g, x);
    }
  };
  using rules = pool2d_backward_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, pool_detail::avg_pooling>;
  template <std::size_t I>
  static constexpr bool reads_operand = I == 0;
  template <class G, class X>  // like gives extents only: any dtype
  static constexpr bool accepts = std::is_floating_point_v<G>;
  template <class T, class Out, class G, class X>
  static void run_cpu(const Out& out, const G& g, const X&) {
    pool_detail::avg_backward<T>(rules::checked(rules::name, out.extents()), g.data(), out.data());
  }
  // Derivative rule (expr/derivative_rule.hpp): linear in g, whose adjoint is the forward pooling
  // of the incoming adjoint; like supplies extents only.
  static auto derivative(const auto& self, const auto& a, const auto&, const auto&, const auto&) {
    return tuple_of(apply_kernel(sibling<avg_pool2d_op>(self), a), no_gradient{});
  }
  template <class Y, class TG, class TX, class G, class X>
  static auto tangent(const Y&, const TG& tg, const TX&, const G&, const X& x) {
    if constexpr (is_no_gradient_v<TG>) return no_gradient{};
    else return make_kernel(avg_pool2d_backward_op{}, source_site{}, tg, x);
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto geo = pool_detail::runtime_geometry(a, rules::name, in[1].extents, std::string(rules::name));
    conv_detail::with_float_element(out.type, rules::name, [&](auto t) {
      using T = decltype(t);
      pool_detail::avg_backward<T>(geo, static_cast<const T*>(in[0].data), out.as<T>());
    });
  }
};
}  // namespace ops

namespace detail {
template <class X>
consteval void check_pool_operand() {
  static_assert(std::is_floating_point_v<value_type_of<X>>, "symflow: pooling needs a floating-point operand");
}
}  // namespace detail

// Max / average pooling over NHWC windows of Window x Window, moved by Stride (default: Window, i.e.
// non-overlapping), with Pad elements of padding on each side of H and W (never read; see
// ops/pool2d_geometry.hpp), Options (pool_options::ceil_mode, pool_options::count_include_pad) and
// the window's positions Dilation apart: max_pool2d<2>(x) halves H and W; avg_pool2d<3, 1, 1>(x)
// keeps them; max_pool2d<3, 1, 2, pool_options::none, 2>(x) reads a 5 x 5 span and keeps them too.
#define SYMFLOW_POOL2D_PARAMETERS                                                                                   \
  std::size_t Window, std::size_t Stride = Window, std::size_t Pad = 0, pool_options Options = pool_options::none, \
      std::size_t Dilation = 1
#define SYMFLOW_POOL2D_OP(op) ops::op<Window, Window, Stride, Stride, Pad, Pad, Options, Dilation, Dilation>
template <SYMFLOW_POOL2D_PARAMETERS, expression X>
auto max_pool2d(const X& x, source_site where = source_site::current()) {
  detail::check_pool_operand<X>();
  return make_kernel(SYMFLOW_POOL2D_OP(max_pool2d_op){}, where, x);
}
template <SYMFLOW_POOL2D_PARAMETERS, expression G, expression X>
auto max_pool2d_backward(const G& g, const X& x, source_site where = source_site::current()) {
  detail::check_pool_operand<X>();
  return make_kernel(SYMFLOW_POOL2D_OP(max_pool2d_backward_op){}, where, g, x);
}
template <SYMFLOW_POOL2D_PARAMETERS, expression X>
auto avg_pool2d(const X& x, source_site where = source_site::current()) {
  detail::check_pool_operand<X>();
  return make_kernel(SYMFLOW_POOL2D_OP(avg_pool2d_op){}, where, x);
}
template <SYMFLOW_POOL2D_PARAMETERS, expression G, expression X>
auto avg_pool2d_backward(const G& g, const X& like, source_site where = source_site::current()) {
  detail::check_pool_operand<G>();
  return make_kernel(SYMFLOW_POOL2D_OP(avg_pool2d_backward_op){}, where, g, like);
}
#undef SYMFLOW_POOL2D_OP
#undef SYMFLOW_POOL2D_PARAMETERS
}  // namespace symflow
#endif  // SYMFLOW_OPS_POOL2D_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, max_pool2d_op<2, 2, 2, 2, 0, 0, pool_options::none>)
SYMFLOW_LISTED(kernel, max_pool2d_backward_op<2, 2, 2, 2, 0, 0, pool_options::none>)
SYMFLOW_LISTED(kernel, avg_pool2d_op<2, 2, 2, 2, 0, 0, pool_options::none>)
SYMFLOW_LISTED(kernel, avg_pool2d_backward_op<2, 2, 2, 2, 0, 0, pool_options::none>)
#endif
