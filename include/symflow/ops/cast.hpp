#ifndef SYMFLOW_OPS_CAST_HPP
#define SYMFLOW_OPS_CAST_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <limits>

#include "../core/storage_float.hpp"
#include "../expr/elementwise.hpp"
#include "../expr/onnx_form.hpp"
#endif

namespace symflow {
namespace ops {
template <class To>
struct cast_op {
  static constexpr std::string_view name = "cast";
#ifndef SYMFLOW_SCALAR_ONLY
  // ONNX Cast. ONNX leaves NaN and out-of-range floats to integers undefined, where this op
  // saturates (NaN -> 0).
  static void write_onnx(onnx_node_writer& w) {
    w.add("Cast", {w.operand(0)}, {{"to", std::int64_t(dtype_info_of(w.dtype_of("to")).onnx)}}, true);
  }
  static constexpr std::array<std::string_view, 1> onnx_reads{"Cast"};
  static void read_onnx(onnx_node_reader& r) {
    if (!r.has("to")) r.refuse("Cast has no 'to' attribute");
    r.result(r.apply(name, {r.input(0)}, {{"to", std::string(dtype_name(dtype_by_onnx(std::int32_t(r.integer("to", 0)))))}}));
  }
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "cast(x), attribute to (the result dtype; cast<To>(x) in C++): converts each element, from any "
      "dtype to any dtype. A float to an integer dtype truncates toward zero and saturates: NaN -> 0, "
      "values at or beyond the range -> the dtype's lowest or max (as Rust's `as`), so cast to i32 of "
      "[NaN, -Inf, 3e9, -2.7] is [0, -2147483648, 2147483647, -2]. To bool: nonzero is true, NaN "
      "included, and ±0 is false. To a float: rounding to nearest, overflow to ±Inf (f64 1e300 to f32 "
      "is +Inf; to f16 and bf16 rounded once, as NumPy does). Between integers: modulo 2^n (i64 2^32 + 5 "
      "to i32 is 5; u8 of -1 is 255). bool converts to 0 or 1. A storage dtype (f16, bf16, i8, u8, i16, "
      "u16, u32, u64) converts by the same rules from its exact value (f16 to i32 of 2.5 is 2, u64 2^63 to "
      "f32 is 9.223372e18). "
      "Gradient: a float-to-float cast passes g back cast to the operand's dtype; none through "
      "integers or bool. Example: cast to i32 of [1.9, -1.9, 0.5] is [1, -1, 0].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Attributes for the graph value (graph/).
  template <class V>
  static void visit_attributes(V&& v) {
    v("to", dtype_v<To>);
  }
  // The same op producing dtype U where it produces a floating dtype (used to re-type a graph).
  template <class U>
  using with_float_dtype = std::conditional_t<std::is_floating_point_v<To>, cast_op<U>, cast_op>;
  // Runtime form (graph interpreter and builder): calls f with the instantiation the attribute names.
  template <class Attrs, class F>
  static decltype(auto) with_runtime_instance(const Attrs& a, F&& f) {
    return visit_dtype(a.dtype_of("to"), [&](auto to) -> decltype(auto) { return f(cast_op<decltype(to)>{}); });
  }
  template <class From>
  using result_type = To;
  template <class From>
  static constexpr bool accepts = is_supported_dtype_v<From> && is_supported_dtype_v<To>;
  // Converts between storage dtypes and compute dtypes itself: the only op whose operands and result
  // may be storage dtypes in a running graph (ir/dtype_rule.hpp).
  static constexpr bool takes_storage_dtypes = true;
#endif
  // A float converted to an integer dtype truncates toward zero and saturates: NaN -> 0, values at or
  // beyond the range -> the dtype's lowest or max (as Rust's `as`, and WebAssembly's trunc_sat);
  // static_cast of an out-of-range float is undefined behaviour. Every other conversion is
  // static_cast: to bool, nonzero (NaN included) is true; to float, rounding to nearest (overflow
  // gives ±Inf); between integers, modulo 2^n.
  template <class From>
  SYMFLOW_HD static To apply(From x) {
#if !defined(SYMFLOW_SCALAR_ONLY) && !defined(__CUDA_ARCH__)
    if constexpr (is_storage_float_v<From>) {  // f16, bf16: converted from their exact f32 value
      return apply(static_cast<float>(x));
    } else if constexpr (is_storage_float_v<To>) {
      return round_to_storage_float<To>(x);
    } else
#endif
    if constexpr (std::numeric_limits<From>::has_infinity && !std::numeric_limits<To>::has_infinity &&
                  To(2) != To(1)) {  // float -> integer, bool excluded
      // The range is [lowest, -lowest) for a signed To and [0, 2^bits) for an unsigned one: powers of
      // two, exact in float and double (NVRTC's numeric_limits has no `digits`).
      constexpr From lo = From(std::numeric_limits<To>::lowest());
      constexpr From hi = To(-1) < To(0) ? -lo : From(2) * From(To(1) << (sizeof(To) * 8 - 1));
      if (x != x) return To(0);
      if (x <= lo) return std::numeric_limits<To>::lowest();
      if (x >= hi) return std::numeric_limits<To>::max();
      return static_cast<To>(x);
    } else {
      return static_cast<To>(x);
    }
  }
#ifndef SYMFLOW_SCALAR_ONLY
  // Forward mode: the tangent is cast like the value.
  template <class Y, class TX, class X>
  static auto tangent(const Y&, const TX& tx, const X&) {
    if constexpr (is_floating_dtype_v<value_type_of<X>> && is_floating_dtype_v<To>) return cast<To>(tx);
    else return no_gradient{};
  }
  // Gradients flow through float-to-float casts, converted back to the operand's dtype.
  template <class G, class Y, class X>
  static auto gradient(const G& g, const Y&, const X&) {
    using From = value_type_of<X>;
    if constexpr (is_floating_dtype_v<From> && is_floating_dtype_v<To>)
      return tuple_of(cast<From>(g));
    else
      return tuple_of(no_gradient{});
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <class To, unary_operand X>
auto cast(const X& x, source_site where = source_site::current()) {
  static_assert(is_compute_dtype_v<To>,
                "symflow: cast<To>(x): expressions compute in float, double, int32_t, int64_t or bool; a "
                "storage type (Eigen::half, ...) is the dtype of a tensor: convert<To>(evaluated tensor)");
  return make_unary<ops::cast_op<To>>(x, where);
}

// A tensor's elements converted to To, by cast's rules (any dtype to any dtype, storage dtypes
// included: convert<Eigen::half>(t) rounds once to f16, convert<float>(h) widens exactly).
template <class To, class From, shape_spec S>
tensor<To, S> convert(const tensor<From, S>& t) {
  tensor<To, S> out(t.extents(), uninitialized);
  const From* in = t.data();
  To* o = out.data();
  for (std::size_t i = 0; i < t.size(); ++i) o[i] = ops::cast_op<To>::apply(in[i]);
  return out;
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_CAST_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, cast_op<float>)
#endif
