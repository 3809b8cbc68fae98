#ifndef SYMFLOW_OPS_CONV2D_GEOMETRY_HPP
#define SYMFLOW_OPS_CONV2D_GEOMETRY_HPP
// What the three convolution ops (conv2d.hpp, conv2d_backprop_input.hpp, conv2d_backprop_filter.hpp)
// share: padding, their settings (stride, padding, dilation, groups), their extent rules, the
// geometry of one convolution, the helpers of their runtime forms and their attributes. It defines no
// op (no entry in the op list); pooling, dropout and softmax_cross_entropy use its runtime helpers too.
// The CPU's column matrix (im2col and its adjoint) is in conv2d_columns.hpp.
//
// Layout: input NHWC [N,H,W,C], filter HWIO [KH,KW,C/G,O], result NHWC [N,OH,OW,O]. NHWC is what the
// data loaders produce ([n,28,28,1] for Fashion-MNIST), and with it one output pixel's receptive
// field is KH runs of KW*C contiguous input values (without dilation or groups), so im2col copies
// whole runs; HWIO makes the filter, read as a [KH*KW*C/G, O] row-major matrix, the right-hand side
// of each group's GEMM without a copy (group g uses its columns [g*O/G, (g+1)*O/G)).
//
// Padding is TensorFlow's: `valid` uses no padding (OH = (H-KH')/stride + 1); `same` gives
// OH = ceil(H/stride) and pads max((OH-1)*stride + KH' - H, 0) zeros in total, the odd one at the
// bottom (right), so a backend that follows TF gives the same values. KH' = (KH-1)*dilation + 1 is
// the span of the dilated window.
//
// CPU: im2col into a buffer for a chunk of images (and one group), then one Eigen GEMM for the chunk;
// the chunks are spread over threads, each running its own im2col and GEMM (conv2d_columns.hpp).
// The filter adjoint sums a fixed number of slices of the batch separately and adds them in order.
// Neither the chunks nor the slices depend on the thread count, and their GEMMs run on one thread
// each, so the thread count does not change a result, except where the whole batch is one chunk of
// enough work for Eigen to spread its GEMM over the threads (a batch of one large image).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include "../core/eigen.hpp"

#include "../core/tensor.hpp"
#include "../core/parallel.hpp"
#include "../expr/derivative_rule.hpp"
#include "../expr/leaves.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"

namespace symflow {

// How a window meets the border (TensorFlow's definitions; see above).
enum class padding : std::uint8_t { valid, same };

namespace ops {
// The convolution family: each op's derivative rule names the others. Dilation d spreads the filter's
// taps d positions apart; groups G split the input channels into G runs of C/G, each convolved with its
// own O/G filters (ONNX Conv's `dilations` and `group`, PyTorch's dilation and groups).
template <std::size_t Stride, padding Padding, std::size_t Dilation = 1, std::size_t Groups = 1>
struct conv2d_op;
template <std::size_t Stride, padding Padding, std::size_t Dilation = 1, std::size_t Groups = 1>
struct conv2d_backprop_input_op;
template <std::size_t Stride, padding Padding, std::size_t Dilation = 1, std::size_t Groups = 1>
struct conv2d_backprop_filter_op;

namespace conv_detail {

// One convolution's settings as values (the typed ops hold them as template arguments).
struct settings {
  std::size_t stride = 1;
  padding pad = padding::valid;
  std::size_t dilation = 1, groups = 1;
};

// The extent a dilated window spans: (k - 1) * d + 1 (0 for an empty window; dyn stays dyn).
constexpr std::size_t dilated_window(std::size_t k, std::size_t d) {
  if (k == dyn) return dyn;
  return k == 0 ? 0 : (k - 1) * d + 1;
}
// k is a dilated window's span here.
constexpr std::size_t output_extent(std::size_t in, std::size_t k, std::size_t stride, padding p) {
  if (p == padding::same) return (in + stride - 1) / stride;
  return in >= k ? (in - k) / stride + 1 : 0;
}
constexpr std::size_t padding_before(std::size_t in, std::size_t k, std::size_t stride, padding p) {
  const std::size_t out = output_extent(in, k, stride, p);
  if (p == padding::valid || out == 0) return 0;
  const std::size_t span = (out - 1) * stride + k;
  return span > in ? (span - in) / 2 : 0;
}

// Static extent rules; dyn stays dyn. A `same` result does not depend on the kernel's extent.
constexpr std::size_t static_output_extent(std::size_t in, std::size_t k, std::size_t stride, padding p) {
  if (in == dyn || (k == dyn && p == padding::valid)) return dyn;
  return output_extent(in, k, stride, p);
}
constexpr bool compatible(std::size_t a, std::size_t b) { return a == b || a == dyn || b == dyn; }

// The convolutions' dtype rule for the two operands they compute with (a `like` operand gives
// extents only, so any dtype): one floating-point dtype.
template <class A, class B>
inline constexpr bool one_floating_dtype = std::is_same_v<A, B> && std::is_floating_point_v<A>;

template <class SX, class SW, std::size_t Stride, padding P, std::size_t D, std::size_t G>
consteval bool static_shapes_fit() {
  if constexpr (SX::rank != 4 || SW::rank != 4) {
    return false;
  } else {
    constexpr auto x = SX::extents;
    constexpr auto w = SW::extents;
    if (x[3] != dyn && w[2] != dyn && x[3] != w[2] * G) return false;
    if (w[3] != dyn && w[3] % G != 0) return false;
    for (std::size_t i = 0; i < 2; ++i) {
      if (w[i] == 0) return false;
      if (P == padding::valid && x[1 + i] != dyn && w[i] != dyn && x[1 + i] < dilated_window(w[i], D)) return false;
    }
    return true;
  }
}
// The probe of op_registry.hpp instantiates result shapes with shapes that fail shapes_ok: those get
// an all-dyn shape instead of a hard error.
template <class SX, class SW, std::size_t Stride, padding P, std::size_t D>
consteval std::array<std::size_t, 4> static_result() {
  if constexpr (SX::rank != 4 || SW::rank != 4) {
    return {dyn, dyn, dyn, dyn};
  } else {
    constexpr auto x = SX::extents;
    constexpr auto w = SW::extents;
    return {x[0], static_output_extent(x[1], dilated_window(w[0], D), Stride, P),
            static_output_extent(x[2], dilated_window(w[1], D), Stride, P), w[3]};
  }
}
// The operands of an adjoint (g, w, x or x, g, w): x and w fit, and g may be conv2d's result for them.
template <class SX, class SW, class SG, std::size_t Stride, padding P, std::size_t D, std::size_t G>
consteval bool adjoint_shapes_fit() {
  if constexpr (!static_shapes_fit<SX, SW, Stride, P, D, G>() || SG::rank != 4) {
    return false;
  } else {
    constexpr auto want = static_result<SX, SW, Stride, P, D>();
    for (std::size_t i = 0; i < 4; ++i)
      if (!compatible(SG::extents[i], want[i])) return false;
    return true;
  }
}

// Everything the kernels need about one convolution, from runtime extents. `channels` and
// `filters` count all groups; a group reads group_channels() of the input and writes
// group_filters() of the output, and its column matrix has patch() columns.
struct geometry {
  std::size_t batch = 0, in_h = 0, in_w = 0, channels = 0, k_h = 0, k_w = 0, filters = 0;
  std::size_t out_h = 0, out_w = 0, stride = 1, pad_top = 0, pad_left = 0;
  std::size_t dilation = 1, groups = 1;

  std::size_t group_channels() const { return channels / groups; }
  std::size_t group_filters() const { return filters / groups; }
  std::size_t patch() const { return k_h * k_w * group_channels(); }
  std::size_t pixels() const { return out_h * out_w; }
  std::size_t input_image() const { return in_h * in_w * channels; }
  std::array<std::size_t, 4> output_extents() const { return {batch, out_h, out_w, filters}; }
};

// x and w: four extents each (std::array or runtime_extents of size 4).
template <class Who, class X, class Wt>
geometry checked_geometry(const Who& who, const X& x, const Wt& w, const settings& s) {
  auto fail = [&](const std::string& why) {
    throw shape_error(std::string(who) + ": conv2d of input " + format_extents(x) + " (NHWC) with filter " +
                      format_extents(w) + " (HWIO): " + why);
  };
  if (x.size() != 4 || w.size() != 4) fail("both must have rank 4");
  if (s.stride == 0) fail("the stride must be at least 1");
  if (s.dilation == 0) fail("the dilation must be at least 1");
  if (s.groups == 0) fail("groups must be at least 1");
  if (s.groups == 1 && x[3] != w[2])
    fail("the input has " + std::to_string(x[3]) + " channels, the filter takes " + std::to_string(w[2]));
  if (s.groups > 1 && (x[3] % s.groups != 0 || x[3] / s.groups != w[2]))
    fail("with " + std::to_string(s.groups) + " groups the input's " + std::to_string(x[3]) +
         " channels must be groups times the filter's " + std::to_string(w[2]) + " input channels");
  if (w[3] % s.groups != 0)
    fail("the filter's " + std::to_string(w[3]) + " output channels do not split into " + std::to_string(s.groups) +
         " groups");
  if (w[0] == 0 || w[1] == 0) fail("the filter window is empty");
  // A dilated window spans (k - 1) * d + 1 positions; one longer than any array cannot fit.
  constexpr std::size_t limit = std::size_t(1) << 48;
  if (s.dilation >= limit || w[0] >= limit || w[1] >= limit || (w[0] - 1) * s.dilation >= limit ||
      (w[1] - 1) * s.dilation >= limit)
    fail("the dilated window (dilation " + std::to_string(s.dilation) + ") is larger than any input");
  const std::size_t span_h = dilated_window(w[0], s.dilation), span_w = dilated_window(w[1], s.dilation);
  if (s.pad == padding::valid && (x[1] < span_h || x[2] < span_w))
    fail(s.dilation == 1 ? std::string("with valid padding the window must fit in the input")
                         : "with valid padding the dilated window (" + std::to_string(span_h) + "x" +
                               std::to_string(span_w) + ") must fit in the input");
  geometry g;
  g.batch = x[0], g.in_h = x[1], g.in_w = x[2], g.channels = x[3];
  g.k_h = w[0], g.k_w = w[1], g.filters = w[3], g.stride = s.stride;
  g.dilation = s.dilation, g.groups = s.groups;
  g.out_h = output_extent(g.in_h, span_h, s.stride, s.pad);
  g.out_w = output_extent(g.in_w, span_w, s.stride, s.pad);
  g.pad_top = padding_before(g.in_h, span_h, s.stride, s.pad);
  g.pad_left = padding_before(g.in_w, span_w, s.stride, s.pad);
  return g;
}

template <class Who, class G, class Want>
void check_adjoint_extents(const Who& who, const G& got, const Want& want, const char* of) {
  bool ok = got.size() == want.size();
  for (std::size_t i = 0; ok && i < want.size(); ++i) ok = got[i] == want[i];
  if (!ok)
    throw shape_error(std::string(who) + ": the adjoint has shape " + format_extents(got) + ", but " + of +
                      " has shape " + format_extents(want));
}

// Runs f(i) for i in [0, count), split over OpenMP threads when the work is large enough to pay
// for starting them; f(i) must touch only image i's memory.
template <class F>
void for_each_image(std::size_t count, [[maybe_unused]] std::size_t work_per_image, F&& f) {
#if defined(_OPENMP)
  if (count > 1 && count * work_per_image >= cpu::parallel_threshold && cpu::max_threads() > 1 && !omp_in_parallel()) {
#pragma omp parallel for schedule(static)
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(count); ++i) f(std::size_t(i));
    return;
  }
#endif
  for (std::size_t i = 0; i < count; ++i) f(i);
}

template <class T>
using row_major = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The interpreter's arrays are f32 or f64 here; the shape rules already ran.
using symflow::with_float_element;

template <class Attrs>
std::size_t runtime_at_least_one(const Attrs& a, const char* key, const std::string& who) {
  const std::int64_t v = a.has(key) ? a.integer(key) : 1;
  if (v < 1) throw value_error(who + ": the " + key + " must be at least 1, not " + std::to_string(v));
  return std::size_t(v);
}
// stride and same_padding are required; dilation and groups are optional (graph files written
// before they existed have neither), 1 when absent.
template <class Attrs>
settings runtime_settings(const Attrs& a, const std::string& who) {
  settings s;
  s.stride = runtime_at_least_one(a, "stride", who);
  s.pad = a.boolean("same_padding") ? padding::same : padding::valid;
  s.dilation = runtime_at_least_one(a, "dilation", who);
  s.groups = runtime_at_least_one(a, "groups", who);
  return s;
}
template <class Attrs>
geometry runtime_geometry(const Attrs& a, const runtime_extents& x, const runtime_extents& w, const std::string& who) {
  return checked_geometry(who, x, w, runtime_settings(a, who));
}
inline void expect_operands(const std::vector<runtime_extents>& in, std::size_t n, const std::string& who) {
  if (in.size() != n)
    throw shape_error(who + ": takes " + std::to_string(n) + " operands, not " + std::to_string(in.size()));
}

// The sum of a tangent's two parts, either of which may be absent (no_gradient).
template <class A, class B>
auto sum_present(const A& a, const B& b) {
  if constexpr (is_no_gradient_v<A>) return b;
  else if constexpr (is_no_gradient_v<B>) return a;
  else return a + b;
}
}  // namespace conv_detail

// Attributes shared by the three ops.
template <std::size_t Stride, padding Padding, std::size_t Dilation, std::size_t Groups>
struct conv2d_attributes {
  static_assert(Stride > 0, "symflow: a convolution's stride must be at least 1");
  static_assert(Dilation > 0, "symflow: a convolution's dilation must be at least 1");
  static_assert(Groups > 0, "symflow: a convolution's groups must be at least 1");
  static constexpr bool contiguous_operands = true;
  // Graph files written before dilation and groups existed have neither: 1.
  static constexpr std::array<std::string_view, 2> optional_attributes{"dilation", "groups"};
  static constexpr conv_detail::settings settings{Stride, Padding, Dilation, Groups};
  template <class V>
  static void visit_attributes(V&& v) {
    v("stride", Stride);
    v("same_padding", Padding == padding::same);
    v("dilation", Dilation);
    v("groups", Groups);
  }
};
}  // namespace ops

namespace detail {
template <class X, class W>
consteval void check_conv_operands() {
  static_assert(ops::conv_detail::one_floating_dtype<value_type_of<X>, value_type_of<W>>,
                "symflow: conv2d needs floating-point operands of one dtype");
}
}  // namespace detail
}  // namespace symflow
#endif  // SYMFLOW_OPS_CONV2D_GEOMETRY_HPP
