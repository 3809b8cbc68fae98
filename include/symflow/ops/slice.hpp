#pragma once
#include "../expr/structural.hpp"

namespace symflow {
namespace ops {

// Rows [begin, end) along axis 0 (a mini-batch out of a dataset): an offset into the operand.
struct slice_op {
  static constexpr std::string_view name = "slice";
  static constexpr bool contiguous_operand = false;
  std::size_t begin = 0, end = 0;

  template <class S>
  static constexpr bool shapes_ok = S::rank >= 1;
  template <class S>
  struct result;
  template <std::size_t E0, std::size_t... Rest>
  struct result<shape<E0, Rest...>> {
    using type = shape<dyn, Rest...>;
  };
  template <class S>
  using result_shape = typename result<S>::type;

  template <std::size_t R>
  extents_t<R> infer_extents(const std::string& who, const extents_t<R>& in) const {
    if (begin > end || end > in[0])
      throw shape_error(who + ": rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                        ") are outside an operand of shape " + format_extents(in));
    extents_t<R> out = in;
    out[0] = end - begin;
    return out;
  }
  template <std::size_t R>
  layout<R> apply(const layout<R>& in) const {
    layout<R> out = in;
    out.extents[0] = end - begin;
    out.offset = in.offset + begin * in.strides[0];
    return out;
  }
};
}  // namespace ops

template <expression X>
auto slice(const X& x, std::size_t begin, std::size_t end,
           std::source_location where = std::source_location::current()) {
  return make_view(ops::slice_op{begin, end}, where, x);
}
}  // namespace symflow
