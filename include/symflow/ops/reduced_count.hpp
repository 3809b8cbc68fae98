#ifndef SYMFLOW_OPS_REDUCED_COUNT_HPP
#define SYMFLOW_OPS_REDUCED_COUNT_HPP
#include <optional>
#include <vector>
#include <bit>

#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "../expr/runtime_forms.hpp"
#include "law_example.hpp"

namespace symflow {
namespace ops {

// The number of elements a reduction over the axes in Bits combines, as a scalar of dtype To. Only
// the operand's extents are used (its values are never computed), so mean's gradient works with
// dyn extents.
template <unsigned Bits, class To>
struct reduced_count_op {
  static constexpr std::string_view name = "reduced_count";
  static constexpr std::string_view doc =
      "reduced_count(x), attributes axes and to (the result dtype; in C++ reduced_count<Bits, To>(x), "
      "bit i for axis i): the number of elements a reduction of x over axes combines, that is the "
      "product of those extents (1 for no axes), as a scalar of dtype to (for bool: count != 0). Only "
      "x's shape is used; its values are never computed, so mean's gradient can use it where extents "
      "are known only at run time. No gradient. Example: axes [1] of any x of shape [2, 3] gives 3.";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 37>>>;
    template <class T>
    static auto of(const auto& x0) { return reduced_count<1u, T>(x0); }
  };
  // Attributes for the graph value (graph/): the counted axes and the result dtype.
  static constexpr auto axes_list = [] {
    std::array<std::size_t, std::popcount(Bits)> out{};
    for (std::size_t i = 0, j = 0; i < 32; ++i)
      if ((Bits >> i) & 1u) out[j++] = i;
    return out;
  }();
  template <class V>
  static void visit_attributes(V&& v) {
    v("axes", axes_list);
    v("to", dtype_v<To>);
  }
  template <class U>
  using with_float_dtype = std::conditional_t<std::is_floating_point_v<To>, reduced_count_op<Bits, U>, reduced_count_op>;
  static constexpr bool contiguous_operands = false;
  template <class X>
  using result_type = To;
  template <class X>
  static constexpr bool accepts = true;  // dtype rule (ir/op_registry.hpp): extents only
  template <std::size_t I>
  static constexpr bool reads_operand = false;
  template <class S>
  static constexpr bool shapes_ok = true;
  template <class S>
  using result_shape = shape<>;

  template <std::size_t R>
  static extents_t<0> infer_extents(const auto&, const extents_t<R>&) {
    return {};
  }
  template <class T, class Out, class X>
  static void run_cpu(const Out& out, const X& x) {
    std::size_t count = 1;
    for (std::size_t i = 0; i < X::rank; ++i)
      if ((Bits >> i) & 1u) count *= x.extent(i);
    out.data()[0] = T(count);
  }
  // Runtime form (graph interpreter and builder): the counted axes and the dtype are values.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    for (auto ax : a.integers("axes")) runtime_axis(who, ax, in.at(0).size());
    return {};
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    std::size_t count = 1;
    for (auto ax : a.integers("axes")) count *= in[0].extents[std::size_t(ax)];
    visit_compute_dtype(out.type, [&](auto t) {
      using T = decltype(t);
      *out.as<T>() = static_cast<T>(count);  // bool: count != 0
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

template <unsigned Bits, class To, expression X>
auto reduced_count(const X& x) {
  return make_kernel(ops::reduced_count_op<Bits, To>{}, source_site{}, x);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_REDUCED_COUNT_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, reduced_count_op<1u, float>)
#endif
