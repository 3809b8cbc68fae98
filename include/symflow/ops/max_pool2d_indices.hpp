#ifndef SYMFLOW_OPS_MAX_POOL2D_INDICES_HPP
#define SYMFLOW_OPS_MAX_POOL2D_INDICES_HPP
// Where max-pooling found each maximum: the second output of ONNX MaxPool and of PyTorch's
// MaxPool2d(return_indices=True), as an op of its own over max_pool2d's geometry (pool2d.hpp).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../core/tensor.hpp"
#include "../expr/derivative_rule.hpp"
#include "../expr/leaves.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"
#include "law_example.hpp"
#include "pool2d.hpp"

namespace symflow {
namespace ops {

namespace pool_detail {
// max_pool2d's geometry and rules under this op's name (messages and graph nodes say which op).
struct max_indices_pooling : max_pooling {
  static constexpr std::string_view name = "max_pool2d_indices";
  static constexpr std::string_view onnx_op = "";  // none: ONNX's MaxPool indices count over all of NCHW
};
}  // namespace pool_detail

// The shape rules, geometry checks and graph attributes are max_pool2d's (pool2d_forward_rules);
// the result type, kernels and derivative are this op's.
template <std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, std::size_t PH, std::size_t PW, pool_options O,
          std::size_t DH = 1, std::size_t DW = 1>
struct max_pool2d_indices_op
    : pool2d_forward_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, pool_detail::max_indices_pooling> {
  using base = pool2d_forward_rules<KH, KW, SH, SW, PH, PW, O, DH, DW, pool_detail::max_indices_pooling>;
  using base::name;
  static constexpr std::string_view doc =
      "max_pool2d_indices(x), attributes as max_pool2d's (in C++ max_pool2d_indices<Window, Stride = "
      "Window, Pad = 0, Options = pool_options::none, Dilation = 1>(x)): for each element of "
      "max_pool2d(x), the position h * W + w (as i64) of the element of x it was taken from, within "
      "its image and channel of x [N, H, W, C]: the first maximum of the window by max_pool2d's strict "
      "scan (row by row, ties keep the first, a NaN only as the window's first element), so that "
      "max_pool2d(x)[n, i, j, c] == x[n, k / W, k % W, c] for k the index. These are PyTorch's "
      "MaxPool2d(return_indices=True) indices (computed on NCHW data they are the same numbers); ONNX "
      "MaxPool's Indices output (storage_order 0) adds (n * C + c) * H * W, its NCHW offset of the "
      "plane. f32 or f64 operand; no gradient (an integer result). Example: window 2 of x = [[1, 3], "
      "[2, 0]] (as [1, 2, 2, 1]) is [[1]]; window [1, 2], stride [1, 1] of the row [4, 9, 9, 1] (as "
      "[1, 1, 4, 1]) is [1, 1, 2].";
  // The law tests' instance of this op (ops/law_example.hpp): padded, dilated and rounded up.
  struct law_example {
    using operands = std::tuple<law::floating<shape<2, 7, 6, 3>>>;
    static constexpr bool differentiable = false;  // an integer result
    template <class T>
    static auto of(const auto& x) {
      return make_kernel(max_pool2d_indices_op<3, 3, 2, 2, 1, 1, pool_options::ceil_mode, 2, 2>{}, source_site{}, x);
    }
  };
  template <class X>
  using result_type = std::int64_t;
  template <class T, class Out, class X>
  static void run_cpu(const Out& out, const X& x) {
    pool_detail::max_indices(pool_detail::checked_geometry(name, name, x.extents(), base::settings), x.data(), out.data());
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const auto geo = pool_detail::runtime_geometry(a, name, in[0].extents, std::string(name));
    conv_detail::with_float_element(in[0].type, name, [&](auto t) {
      using T = decltype(t);
      pool_detail::max_indices<T>(geo, static_cast<const T*>(in[0].data), out.as<std::int64_t>());
    });
  }
  template <class Y, class TX, class X>
  static auto tangent(const Y&, const TX&, const X&) {
    return no_gradient{};
  }
  // Derivative rule (expr/derivative_rule.hpp): piecewise constant, so nothing flows back.
  static auto derivative(const auto&, const auto&, const auto&, const auto&) { return tuple_of(no_gradient{}); }
};
}  // namespace ops

// max_pool2d_indices<Window, Stride, Pad, Options, Dilation>(x): where max_pool2d with the same
// arguments took each maximum from, as h * W + w within its image and channel (i64).
template <std::size_t Window, std::size_t Stride = Window, std::size_t Pad = 0, pool_options Options = pool_options::none,
          std::size_t Dilation = 1, expression X>
auto max_pool2d_indices(const X& x, source_site where = source_site::current()) {
  detail::check_pool_operand<X>();
  return make_kernel(ops::max_pool2d_indices_op<Window, Window, Stride, Stride, Pad, Pad, Options, Dilation, Dilation>{}, where, x);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_MAX_POOL2D_INDICES_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, max_pool2d_indices_op<2, 2, 2, 2, 0, 0, pool_options::none>)
#endif
