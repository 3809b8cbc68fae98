#ifndef SYMFLOW_OPS_CLIP_HPP
#define SYMFLOW_OPS_CLIP_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <optional>
#include <limits>

#include "../expr/elementwise.hpp"
#include "greater.hpp"
#include "less.hpp"
#include "less_equal.hpp"
#include "greater_equal.hpp"
#include "logical_and.hpp"
#include "logical_or.hpp"
#include "packet_math.hpp"
#include "maximum.hpp"
#include "minimum.hpp"
#include "where.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
// The bounds are operands (ONNX Clip takes them as inputs too): numbers in C++ become literals,
// tensors broadcast, and both get adjoints.
struct clip_op : same_dtype_result {
  static constexpr std::string_view name = "clip";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX Clip takes scalar bounds only; here they broadcast: min(max(x, lo), hi).
  static void write_onnx(onnx_node_writer& w) {
    w.add("Min", {w.add("Max", {w.operand(0), w.operand(1)}), w.operand(2)}, {}, true);
  }
  // ONNX Clip: bounds as optional inputs (attributes min and max before opset 11); a missing bound
  // does not clip.
  static constexpr std::array<std::string_view, 1> onnx_reads{"Clip"};
  static void read_onnx(onnx_node_reader& r) {
    const onnx_node_reader::value x = r.input(0);
    const auto bound = [&](std::size_t i, std::string_view attribute) -> std::optional<onnx_node_reader::value> {
      if (r.opset() < 11) {
        if (!r.has(attribute)) return std::nullopt;
        return r.scalar(r.dtype_of(x), r.number(attribute, 0));
      }
      if (!r.has_input(i)) return std::nullopt;
      return r.input(i);
    };
    const auto lo = bound(1, "min"), hi = bound(2, "max");
    if (lo && hi) return r.result(r.apply(name, {x, *lo, *hi}));
    if (lo) return r.result(r.apply(maximum_op::name, {x, *lo}));
    if (hi) return r.result(r.apply(minimum_op::name, {x, *hi}));
    r.result(x);
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "clip(x, lo, hi) = min(max(x, lo), hi), elementwise (ONNX Clip, NumPy's clip, PyTorch's clamp). "
      "x, lo and hi have one dtype (any) and broadcast; in C++ the bounds may be plain numbers. Where "
      "lo > hi the result is hi, as in NumPy and ONNX. A NaN operand gives NaN (x's NaN first, then "
      "lo's, then hi's); a value equal to a bound is kept as it is (clip(-0, +0, 1) = -0). SIMD and "
      "scalar forms agree bit for bit. Gradient: to the operand whose value the result is: g to x "
      "where lo <= x <= hi (ties go to x), to lo where x < lo <= hi, to hi where hi < x or hi < lo; "
      "summed over broadcast axes. Example: clip([-2, 0.5, 7], 0, 6) is [0, 0.5, 6].";
#endif
  template <class T>
  SYMFLOW_HD static T apply(T x, T lo, T hi) {
    if constexpr (std::numeric_limits<T>::has_infinity) {
      if (x != x) return x;
      if (lo != lo) return lo;
      if (hi != hi) return hi;
    }
    const T r = x < lo ? lo : x;
    return hi < r ? hi : r;
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class P>
  static P packet(const P& x, const P& lo, const P& hi) {
    namespace pm = simd::pm;
    P r = pm::pselect(pm::pcmp_lt(x, lo), lo, x);
    r = pm::pselect(pm::pcmp_lt(hi, r), hi, r);
    r = pm::pselect(simd::nan_lanes(hi), hi, r);
    r = pm::pselect(simd::nan_lanes(lo), lo, r);
    return pm::pselect(simd::nan_lanes(x), x, r);
  }
  // Derivative rule: adjoints of (x, lo, hi) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X, class L, class H>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, const X& x, const L& lo, const H& hi) {
    using T = value_type_of<G>;
    return tuple_of(where(logical_and(x >= lo, x <= hi), g, zero<T>{}),
                    where(logical_and(x < lo, lo <= hi), g, zero<T>{}),
                    where(logical_or(hi < x, hi < lo), g, zero<T>{}));
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

// clip(x, lo, hi): x limited to [lo, hi]; any operand may be a plain number but one.
template <class X, class L, class H>
  requires((operand<X> || value_handle<X>) && (operand<L> || value_handle<L>) && (operand<H> || value_handle<H>))
auto clip(const X& x, const L& lo, const H& hi, source_site at = source_site::current()) {
  if constexpr (value_handle<X> || value_handle<L> || value_handle<H>) {
    return apply_value(ops::clip_op{}, x, lo, hi);
  } else {
    static_assert(expression<X> || expression<L> || expression<H>, "symflow: clip needs an expression operand");
    using T = value_type_of<std::conditional_t<expression<X>, X, std::conditional_t<expression<L>, L, H>>>;
    return make_elementwise(ops::clip_op{}, at, as_expression<T>(x), as_expression<T>(lo), as_expression<T>(hi));
  }
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_CLIP_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, clip_op)
#endif
