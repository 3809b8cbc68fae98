#pragma once
#include <algorithm>

#include "../expr/structural.hpp"

namespace symflow {
namespace ops {

// Integer labels of shape S -> S + [Depth] with 1 at the label and 0 elsewhere. A label outside
// [0, Depth) gives a row of zeros (as TensorFlow does), so padding labels such as -1 are harmless.
template <std::size_t Depth, class To>
struct one_hot_op {
  static constexpr std::string_view name = "one_hot";
  // Attributes for the graph value (graph/).
  template <class V>
  static void visit_attributes(V&& v) {
    v("depth", Depth);
    v("to", dtype_v<To>);
  }
  template <class U>
  using with_float_dtype = std::conditional_t<std::is_floating_point_v<To>, one_hot_op<Depth, U>, one_hot_op>;
  static constexpr bool contiguous_operands = true;
  template <class Label>
  using result_type = To;
  template <class S>
  static constexpr bool shapes_ok = true;
  template <class S>
  using result_shape = shape_from_array_t<[] {
    std::array<std::size_t, S::rank + 1> out{};
    for (std::size_t i = 0; i < S::rank; ++i) out[i] = S::extents[i];
    out[S::rank] = Depth;
    return out;
  }()>;

  template <std::size_t R>
  static extents_t<R + 1> infer_extents(const auto&, const extents_t<R>& in) {
    extents_t<R + 1> out{};
    std::copy(in.begin(), in.end(), out.begin());
    out[R] = Depth;
    return out;
  }
  template <class Y, class TL, class L>
  static auto tangent(const Y&, const TL&, const L&) {
    return no_gradient{};
  }
  template <class G, class Y, class L>
  static auto gradient(const G&, const Y&, const L&) {
    return std::tuple{no_gradient{}};
  }
  template <class T, class Out, class Labels>
  static void run_cpu(const Out& out, const Labels& labels) {
    const std::size_t n = labels.size();
    std::fill_n(out.data(), n * Depth, T(0));
    for (std::size_t i = 0; i < n; ++i) {
      const auto label = labels.data()[i];
      if (label >= 0 && static_cast<std::size_t>(label) < Depth) out.data()[i * Depth + std::size_t(label)] = T(1);
    }
  }
};
}  // namespace ops

template <std::size_t Depth, class To = float, expression L>
auto one_hot(const L& labels, std::source_location where = std::source_location::current()) {
  static_assert(std::is_integral_v<value_type_of<L>> && !std::is_same_v<value_type_of<L>, bool>,
                "symflow: one_hot takes integer labels");
  return make_kernel(ops::one_hot_op<Depth, To>{}, where, labels);
}
}  // namespace symflow
