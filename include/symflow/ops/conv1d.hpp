#pragma once
// 1-D convolution, composed of 2-D convolution: x [N, L, C] is convolved as [N, 1, L, C] with the
// filter [K, C, O] as [1, K, C, O], and the unit axis dropped. No rules of its own: values,
// gradients, the graph form and the CUDA kernels are conv2d's.
#include <cstddef>

#include "../expr/scope.hpp"
#include "conv2d.hpp"
#include "expand_dims.hpp"
#include "reshape.hpp"

namespace symflow {

// conv1d<Stride, Padding, Dilation, Groups>(x [N, L, C], w [K, C/Groups, O]) -> [N, L', O], as
// tf.nn.conv1d (NWC, `valid` or `same` padding) and torch.nn.functional.conv1d on channels-last data. One of N and L may be
// unknown (dyn), not both: dropping the unit axis is a reshape, which infers one extent.
template <std::size_t Stride = 1, padding Padding = padding::valid, std::size_t Dilation = 1, std::size_t Groups = 1,
          expression X, expression W>
auto conv1d(const X& x, const W& w, source_site where = source_site::current()) {
  static_assert(shape_of<X>::rank == 3, "symflow: conv1d: x must be [N, L, C] (batch, length, channels)");
  static_assert(shape_of<W>::rank == 3, "symflow: conv1d: w must be [K, C/groups, O] (window, input channels per group, output channels)");
  if constexpr (shape_of<X>::rank == 3 && shape_of<W>::rank == 3) {
    name_scope scope("conv1d");
    const auto y = conv2d<Stride, Padding, Dilation, Groups>(unsqueeze<1>(x), unsqueeze<0>(w), where);  // [N, 1, L', O]
    constexpr auto e = shape_of<decltype(y)>::extents;
    static_assert(!(e[0] == dyn && e[2] == dyn),
                  "symflow: conv1d: x [N, L, C] may have one unknown extent, N or L, not both");
    return reshape<shape<e[0], e[2], e[3]>>(y);
  }
}

}  // namespace symflow
