#pragma once
// 1-D max and average pooling, composed of 2-D pooling: x [N, L, C] is pooled as [N, 1, L, C] with a
// 1 x Window window, and the unit axis dropped. No rules of their own: values, gradients and the
// graph form are max_pool2d's and avg_pool2d's.
#include <cstddef>
#include <type_traits>

#include "../expr/scope.hpp"
#include "expand_dims.hpp"
#include "pool2d.hpp"
#include "reshape.hpp"

namespace symflow {
namespace detail {
template <bool Max, std::size_t Window, std::size_t Stride, std::size_t Pad, pool_options Options, std::size_t Dilation, class X>
auto pool1d(const X& x, source_site where) {
  static_assert(shape_of<X>::rank == 3, "symflow: max_pool1d / avg_pool1d: x must be [N, L, C] (batch, length, channels)");
  if constexpr (shape_of<X>::rank == 3) {
    check_pool_operand<X>();
    name_scope scope(Max ? "max_pool1d" : "avg_pool1d");
    using max_op = ops::max_pool2d_op<1, Window, 1, Stride, 0, Pad, Options, 1, Dilation>;
    using avg_op = ops::avg_pool2d_op<1, Window, 1, Stride, 0, Pad, Options, 1, Dilation>;
    const auto y = make_kernel(std::conditional_t<Max, max_op, avg_op>{}, where, unsqueeze<1>(x));  // [N, 1, L', C]
    constexpr auto e = shape_of<decltype(y)>::extents;
    static_assert(!(e[0] == dyn && e[2] == dyn),
                  "symflow: max_pool1d / avg_pool1d: x [N, L, C] may have one unknown extent, N or L, not both");
    return reshape<shape<e[0], e[2], e[3]>>(y);
  }
}
}  // namespace detail

// max_pool1d<Window, Stride = Window, Pad = 0, Options, Dilation = 1>(x [N, L, C]) -> [N, L', C], as
// torch.nn.MaxPool1d on channels-last data and ONNX MaxPool on one spatial axis:
// L' = floor((L + 2 Pad - (Window - 1) * Dilation - 1) / Stride) + 1 (ceil with pool_options::ceil_mode).
template <std::size_t Window, std::size_t Stride = Window, std::size_t Pad = 0, pool_options Options = pool_options::none,
          std::size_t Dilation = 1, expression X>
auto max_pool1d(const X& x, source_site where = source_site::current()) {
  return detail::pool1d<true, Window, Stride, Pad, Options, Dilation>(x, where);
}
// avg_pool1d<Window, Stride = Window, Pad = 0, Options, Dilation = 1>(x [N, L, C]) -> [N, L', C], as
// torch.nn.AvgPool1d (with pool_options::count_include_pad, its default) and ONNX AveragePool
// (whose dilations PyTorch's average pooling lacks).
template <std::size_t Window, std::size_t Stride = Window, std::size_t Pad = 0, pool_options Options = pool_options::none,
          std::size_t Dilation = 1, expression X>
auto avg_pool1d(const X& x, source_site where = source_site::current()) {
  return detail::pool1d<false, Window, Stride, Pad, Options, Dilation>(x, where);
}

}  // namespace symflow
