#ifndef SYMFLOW_OPS_POOL2D_HPP
#define SYMFLOW_OPS_POOL2D_HPP
// 2-D max and average pooling over NHWC [N,H,W,C] with `valid` windows (no padding):
// OH = (H - Window) / Stride + 1. Each has a backward kernel op for its adjoint.
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
#include "conv2d_geometry.hpp"
#include "law_example.hpp"

namespace symflow {
namespace ops {
namespace pool_detail {

struct geometry {
  std::size_t batch = 0, in_h = 0, in_w = 0, channels = 0, window = 1, stride = 1, out_h = 0, out_w = 0;
  std::array<std::size_t, 4> output_extents() const { return {batch, out_h, out_w, channels}; }
};

template <class Who, class X>
geometry checked_geometry(const Who& who, std::string_view op, const X& x, std::size_t window, std::size_t stride) {
  auto fail = [&](const std::string& why) {
    throw shape_error(std::string(who) + ": " + std::string(op) + " of " + format_extents(x) + " (NHWC) with window " +
                      std::to_string(window) + ", stride " + std::to_string(stride) + ": " + why);
  };
  if (x.size() != 4) fail("the input must have rank 4");
  if (window == 0 || stride == 0) fail("window and stride must be at least 1");
  if (x[1] < window || x[2] < window) fail("the window must fit in the input (valid padding)");
  return {x[0], x[1], x[2], x[3], window, stride, (x[1] - window) / stride + 1, (x[2] - window) / stride + 1};
}

constexpr std::size_t static_output_extent(std::size_t in, std::size_t window, std::size_t stride) {
  return in == dyn ? dyn : (in - window) / stride + 1;
}
template <class S, std::size_t Window, std::size_t Stride>
consteval bool static_shape_fits() {
  if constexpr (S::rank != 4) return false;
  else return (S::extents[1] == dyn || S::extents[1] >= Window) && (S::extents[2] == dyn || S::extents[2] >= Window);
}
template <class S, std::size_t Window, std::size_t Stride>
consteval std::array<std::size_t, 4> static_result() {
  if constexpr (!static_shape_fits<S, Window, Stride>()) {
    return {dyn, dyn, dyn, dyn};  // probed by op_registry.hpp with shapes that do not fit
  } else {
    constexpr auto x = S::extents;
    return {x[0], static_output_extent(x[1], Window, Stride), static_output_extent(x[2], Window, Stride), x[3]};
  }
}
template <class SG, class SX, std::size_t Window, std::size_t Stride>
consteval bool static_adjoint_fits() {
  if constexpr (!static_shape_fits<SX, Window, Stride>() || SG::rank != 4) {
    return false;
  } else {
    constexpr auto want = static_result<SX, Window, Stride>();
    for (std::size_t i = 0; i < 4; ++i)
      if (!conv_detail::compatible(SG::extents[i], want[i])) return false;
    return true;
  }
}

// Calls f(first input offset of the window, output offset) for each output pixel of image n; channel
// c of that pixel's window element (kh, kw) is at window + (kh*in_w + kw)*C + c.
template <class F>
void for_each_window(const geometry& g, std::size_t n, F&& f) {
  const std::size_t C = g.channels;
  for (std::size_t oh = 0; oh < g.out_h; ++oh)
    for (std::size_t ow = 0; ow < g.out_w; ++ow)
      f(((n * g.in_h + oh * g.stride) * g.in_w + ow * g.stride) * C, ((n * g.out_h + oh) * g.out_w + ow) * C);
}

template <class T>
void max_forward(const geometry& g, const T* x, T* y) {
  const std::size_t C = g.channels, row = g.in_w * C;
  conv_detail::for_each_image(g.batch, g.out_h * g.out_w * C * g.window * g.window, [&](std::size_t n) {
    for_each_window(g, n, [&](std::size_t in, std::size_t out) {
      std::copy_n(x + in, C, y + out);
      for (std::size_t kh = 0; kh < g.window; ++kh)
        for (std::size_t kw = 0; kw < g.window; ++kw) {
          const T* v = x + in + kh * row + kw * C;
          for (std::size_t c = 0; c < C; ++c)
            if (v[c] > y[out + c]) y[out + c] = v[c];
        }
    });
  });
}

// dx[first argmax of each window] += g; windows of one image touch only that image.
template <class T>
void max_backward(const geometry& g, const T* dy, const T* x, T* dx) {
  const std::size_t C = g.channels, row = g.in_w * C;
  std::fill_n(dx, g.batch * g.in_h * g.in_w * C, T(0));
  conv_detail::for_each_image(g.batch, g.out_h * g.out_w * C * g.window * g.window, [&](std::size_t n) {
    // The running maximum next to its position: the scan then reads x contiguously and vectorises.
    std::vector<T> top(C);
    std::vector<std::size_t> best(C);
    for_each_window(g, n, [&](std::size_t in, std::size_t out) {
      std::copy_n(x + in, C, top.begin());
      std::fill(best.begin(), best.end(), in);
      for (std::size_t kh = 0; kh < g.window; ++kh)
        for (std::size_t kw = 0; kw < g.window; ++kw) {
          const std::size_t at = in + kh * row + kw * C;
          for (std::size_t c = 0; c < C; ++c)
            if (x[at + c] > top[c]) top[c] = x[at + c], best[c] = at;
        }
      for (std::size_t c = 0; c < C; ++c) dx[best[c] + c] += dy[out + c];
    });
  });
}

template <class T>
void avg_forward(const geometry& g, const T* x, T* y) {
  const std::size_t C = g.channels, row = g.in_w * C;
  const T count = T(g.window * g.window);
  conv_detail::for_each_image(g.batch, g.out_h * g.out_w * C * g.window * g.window, [&](std::size_t n) {
    for_each_window(g, n, [&](std::size_t in, std::size_t out) {
      std::fill_n(y + out, C, T(0));
      for (std::size_t kh = 0; kh < g.window; ++kh)
        for (std::size_t kw = 0; kw < g.window; ++kw) {
          const T* v = x + in + kh * row + kw * C;
          for (std::size_t c = 0; c < C; ++c) y[out + c] += v[c];
        }
      for (std::size_t c = 0; c < C; ++c) y[out + c] /= count;
    });
  });
}

template <class T>
void avg_backward(const geometry& g, const T* dy, T* dx) {
  const std::size_t C = g.channels, row = g.in_w * C;
  const T count = T(g.window * g.window);
  std::fill_n(dx, g.batch * g.in_h * g.in_w * C, T(0));
  conv_detail::for_each_image(g.batch, g.out_h * g.out_w * C * g.window * g.window, [&](std::size_t n) {
    for_each_window(g, n, [&](std::size_t in, std::size_t out) {
      for (std::size_t kh = 0; kh < g.window; ++kh)
        for (std::size_t kw = 0; kw < g.window; ++kw) {
          T* d = dx + in + kh * row + kw * C;
          for (std::size_t c = 0; c < C; ++c) d[c] += dy[out + c] / count;
        }
    });
  });
}

template <class Attrs>
geometry runtime_geometry(const Attrs& a, std::string_view op, const runtime_extents& x, const std::string& who) {
  const std::int64_t window = a.integer("window"), stride = a.integer("stride");
  if (window < 1 || stride < 1)
    throw value_error(who + ": window and stride must be at least 1, not " + std::to_string(window) + " and " +
                      std::to_string(stride));
  return checked_geometry(who, op, x, std::size_t(window), std::size_t(stride));
}
}  // namespace pool_detail

template <std::size_t Window, std::size_t Stride>
struct pool2d_attributes {
  static_assert(Window > 0 && Stride > 0, "symflow: a pooling window and stride must be at least 1");
  static constexpr bool contiguous_operands = true;
  template <class V>
  static void visit_attributes(V&& v) {
    v("window", Window);
    v("stride", Stride);
  }
};

// Pooling ops with one operand x, or with (g, x) for the adjoint.
template <std::size_t Window, std::size_t Stride>
struct pool2d_shape_rules : pool2d_attributes<Window, Stride> {
  template <class X, class... Rest>
  using result_type = X;
  template <class X, class... Rest>  // dtype rule (ir/op_registry.hpp): one floating-point dtype
  static constexpr bool accepts = std::is_floating_point_v<X> && (std::is_same_v<X, Rest> && ...);
};

namespace pool_detail {
// What distinguishes max from average pooling in the rules the two share below.
struct max_pooling {
  static constexpr std::string_view name = "max_pool2d", backward_name = "max_pool2d_backward";
  static constexpr const char* result = "max_pool2d's result";
  template <class T>
  static void forward(const geometry& g, const T* x, T* y) {
    max_forward<T>(g, x, y);
  }
};
struct avg_pooling {
  static constexpr std::string_view name = "avg_pool2d", backward_name = "avg_pool2d_backward";
  static constexpr const char* result = "avg_pool2d's result";
  template <class T>
  static void forward(const geometry& g, const T* x, T* y) {
    avg_forward<T>(g, x, y);
  }
};
}  // namespace pool_detail

// Forward pooling x [N,H,W,C] -> [N,OH,OW,C]: the window's geometry, checks and kernels at compile
// time and in the interpreter; the op adds its derivative rule.
template <std::size_t Window, std::size_t Stride, class Pooling>
struct pool2d_forward_rules : pool2d_shape_rules<Window, Stride> {
  static constexpr std::string_view name = Pooling::name;
  template <class S>
  static constexpr bool shapes_ok = pool_detail::static_shape_fits<S, Window, Stride>();
  template <class S>
  using result_shape = shape_from_array_t<pool_detail::static_result<S, Window, Stride>()>;
  static extents_t<4> infer_extents(const auto& who, const extents_t<4>& x) {
    return pool_detail::checked_geometry(who, name, x, Window, Stride).output_extents();
  }
  template <class T, class Out, class X>
  static void run_cpu(const Out& out, const X& x) {
    Pooling::template forward<T>(pool_detail::checked_geometry(name, name, x.extents(), Window, Stride), x.data(), out.data());
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
template <std::size_t Window, std::size_t Stride, class Pooling>
struct pool2d_backward_rules : pool2d_shape_rules<Window, Stride> {
  static constexpr std::string_view name = Pooling::backward_name;
  template <class SG, class SX>
  static constexpr bool shapes_ok = pool_detail::static_adjoint_fits<SG, SX, Window, Stride>();
  template <class SG, class SX>
  using result_shape = SX;
  static extents_t<4> infer_extents(const auto& who, const extents_t<4>& g, const extents_t<4>& x) {
    conv_detail::check_adjoint_extents(who, g, pool_detail::checked_geometry(who, name, x, Window, Stride).output_extents(),
                                       Pooling::result);
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
template <std::size_t Window, std::size_t Stride>
struct max_pool2d_backward_op;
template <std::size_t Window, std::size_t Stride>
struct avg_pool2d_backward_op;

template <std::size_t Window, std::size_t Stride>
struct max_pool2d_op : pool2d_forward_rules<Window, Stride, pool_detail::max_pooling> {
  static constexpr std::string_view doc =
      "max_pool2d(x), attributes window and stride (both >= 1; in C++ max_pool2d<Window, Stride = "
      "Window>(x)): the maximum of each window x window patch of an NHWC input x [N, H, W, C], per "
      "channel, moved by stride, without padding: [N, OH, OW, C] with OH = (H - window) / stride + 1, "
      "and the window must fit in the input (a shape error otherwise). f32 or f64. Each window is "
      "scanned row by row and an element replaces the running maximum only when it is strictly "
      "greater, so ties keep the first maximum (-0 then +0 gives -0), and NaN is the result only when "
      "it is the window's first element: a NaN further on is never greater and is skipped. Gradient: "
      "max_pool2d_backward(g, x), which routes g to each window's first maximum. Example: window 2, "
      "stride 2 of x = [[1, 3], [2, 0]] (as [1, 2, 2, 1]) is [[3]] (as [1, 1, 1, 1]).";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 5, 5, 3>>>;
    template <class T>
    static auto of(const auto& x) { return max_pool2d<2, 1>(x); }
  };
  // Derivative rule (expr/derivative_rule.hpp): g routed back by the backward op of the family.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto& x) {
    return tuple_of(apply_kernel(sibling<max_pool2d_backward_op>(self), g, x));
  }
};

// max_pool2d_backward(g, x): g routed to each window's first maximum of x (recomputed here rather
// than stored by the forward pass).
template <std::size_t Window, std::size_t Stride>
struct max_pool2d_backward_op : pool2d_backward_rules<Window, Stride, pool_detail::max_pooling> {
  static constexpr std::string_view doc =
      "max_pool2d_backward(g, x), attributes window and stride (as max_pool2d's): the adjoint of "
      "max_pool2d(x), a tensor of x's shape that is zero except that each g[n, i, j, c] is added at "
      "the first maximum of its window of x, found by max_pool2d's strict scan (a window led by a NaN "
      "sends it to that NaN); overlapping windows add up. g must have the extents max_pool2d gives x "
      "(a shape error otherwise); f32 or f64. Second derivatives through max-pooling are refused (a "
      "compile-time error in C++, a value error in graph differentiation). Example: window 2 with g = "
      "[[5]] and x = [[1, 3], [2, 0]] gives [[0, 5], [0, 0]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 4, 4, 3>>, law::floating<shape<2, 5, 5, 3>>>;
    static constexpr bool differentiable = false;  // second derivatives are refused
    template <class T>
    static auto of(const auto& g, const auto& x) { return max_pool2d_backward<2, 1>(g, x); }
  };
  using rules = pool2d_backward_rules<Window, Stride, pool_detail::max_pooling>;
  template <class T, class Out, class G, class X>
  static void run_cpu(const Out& out, const G& g, const X& x) {
    pool_detail::max_backward<T>(pool_detail::checked_geometry(rules::name, rules::name, x.extents(), Window, Stride), g.data(),
                                 x.data(), out.data());
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

template <std::size_t Window, std::size_t Stride>
struct avg_pool2d_op : pool2d_forward_rules<Window, Stride, pool_detail::avg_pooling> {
  static constexpr std::string_view doc =
      "avg_pool2d(x), attributes window and stride (both >= 1; in C++ avg_pool2d<Window, Stride = "
      "Window>(x)): the mean of each window x window patch of an NHWC input x [N, H, W, C], per "
      "channel, moved by stride, without padding: [N, OH, OW, C] with OH = (H - window) / stride + 1, "
      "and the window must fit in the input (a shape error otherwise); every window is full, so every "
      "mean divides by window^2. f32 or f64: the window's sum is accumulated in the element type, row "
      "by row, then divided, so a NaN, or +Inf together with -Inf, in a window gives NaN, and an Inf "
      "alone gives that Inf. Gradient: avg_pool2d_backward(g, like x). Example: window 2 of x = [[1, "
      "3], [2, 0]] (as [1, 2, 2, 1]) is [[1.5]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 5, 5, 3>>>;
    template <class T>
    static auto of(const auto& x) { return avg_pool2d<2, 1>(x); }
  };
  // Derivative rule (expr/derivative_rule.hpp): g spread back by the backward op of the family.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto& x) {
    return tuple_of(apply_kernel(sibling<avg_pool2d_backward_op>(self), g, x));
  }
  template <class Y, class TX, class X>
  static auto tangent(const Y&, const TX& tx, const X&) {
    if constexpr (is_no_gradient_v<TX>) return no_gradient{};
    else return avg_pool2d<Window, Stride>(tx);
  }
};

// avg_pool2d_backward(g, like x): g / Window^2 spread over each window; `like` supplies extents only.
template <std::size_t Window, std::size_t Stride>
struct avg_pool2d_backward_op : pool2d_backward_rules<Window, Stride, pool_detail::avg_pooling> {
  static constexpr std::string_view doc =
      "avg_pool2d_backward(g, like), attributes window and stride (as avg_pool2d's): the adjoint of "
      "avg_pool2d, a tensor of like's shape (like's values are never read) in which g[n, i, j, c] / "
      "window^2 is added to every position of its window; overlapping windows add up and positions no "
      "window covers are 0. g must have the extents avg_pool2d gives like (a shape error otherwise); "
      "f32 or f64. Linear in g: its gradient is avg_pool2d of the adjoint for g, none for like. "
      "Example: window 2 with g = [[4]] gives [[1, 1], [1, 1]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 4, 4, 3>>, law::floating<shape<2, 5, 5, 3>>>;
    template <class T>
    static auto of(const auto& g, const auto& x) { return avg_pool2d_backward<2, 1>(g, x); }
  };
  using rules = pool2d_backward_rules<Window, Stride, pool_detail::avg_pooling>;
  template <std::size_t I>
  static constexpr bool reads_operand = I == 0;
  template <class G, class X>  // like gives extents only: any dtype
  static constexpr bool accepts = std::is_floating_point_v<G>;
  template <class T, class Out, class G, class X>
  static void run_cpu(const Out& out, const G& g, const X&) {
    pool_detail::avg_backward<T>(pool_detail::checked_geometry(rules::name, rules::name, out.extents(), Window, Stride), g.data(),
                                 out.data());
  }
  // Derivative rule (expr/derivative_rule.hpp): linear in g, whose adjoint is the forward pooling
  // of the incoming adjoint; like supplies extents only.
  static auto derivative(const auto& self, const auto& a, const auto&, const auto&, const auto&) {
    return tuple_of(apply_kernel(sibling<avg_pool2d_op>(self), a), no_gradient{});
  }
  template <class Y, class TG, class TX, class G, class X>
  static auto tangent(const Y&, const TG& tg, const TX&, const G&, const X& x) {
    if constexpr (is_no_gradient_v<TG>) return no_gradient{};
    else return avg_pool2d_backward<Window, Stride>(tg, x);
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
// non-overlapping), valid padding: max_pool2d<2>(x) halves H and W.
template <std::size_t Window, std::size_t Stride = Window, expression X>
auto max_pool2d(const X& x, source_site where = source_site::current()) {
  detail::check_pool_operand<X>();
  return make_kernel(ops::max_pool2d_op<Window, Stride>{}, where, x);
}
template <std::size_t Window, std::size_t Stride = Window, expression G, expression X>
auto max_pool2d_backward(const G& g, const X& x, source_site where = source_site::current()) {
  detail::check_pool_operand<X>();
  return make_kernel(ops::max_pool2d_backward_op<Window, Stride>{}, where, g, x);
}
template <std::size_t Window, std::size_t Stride = Window, expression X>
auto avg_pool2d(const X& x, source_site where = source_site::current()) {
  detail::check_pool_operand<X>();
  return make_kernel(ops::avg_pool2d_op<Window, Stride>{}, where, x);
}
template <std::size_t Window, std::size_t Stride = Window, expression G, expression X>
auto avg_pool2d_backward(const G& g, const X& like, source_site where = source_site::current()) {
  detail::check_pool_operand<G>();
  return make_kernel(ops::avg_pool2d_backward_op<Window, Stride>{}, where, g, like);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_POOL2D_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, max_pool2d_op<2, 2>)
SYMFLOW_LISTED(kernel, max_pool2d_backward_op<2, 2>)
SYMFLOW_LISTED(kernel, avg_pool2d_op<2, 2>)
SYMFLOW_LISTED(kernel, avg_pool2d_backward_op<2, 2>)
#endif
