#ifndef SYMFLOW_OPS_ERF_HPP
#define SYMFLOW_OPS_ERF_HPP
#ifndef SYMFLOW_SCALAR_ONLY
#include <cmath>
#include <type_traits>

#include "../expr/elementwise.hpp"
#include "exp.hpp"
#include "packet_math.hpp"
#include "mul.hpp"
#include "neg.hpp"
#include "square.hpp"
#endif

namespace symflow {
namespace ops {
struct erf_op : floating_result {
  static constexpr std::string_view name = "erf";
  static constexpr std::string_view onnx_op = "Erf";  // its ONNX form (expr/onnx_form.hpp)
#ifndef SYMFLOW_SCALAR_ONLY
  static constexpr std::string_view doc =
      "erf(x) = 2/sqrt(pi) * integral from 0 to x of exp(-t^2) dt, the error function, elementwise; f32 "
      "or f64. f32 on the host: a rational approximation x P(x^2) / Q(x^2) with a SIMD form, within 6 "
      "ulps of the exact value (mean under 1 ulp; Eigen's is within 7), the same bits in every lane and "
      "at every SIMD width; f64 and device code: std::erf. erf(+Inf) = 1, erf(-Inf) = -1, erf(-0) = -0, "
      "NaN stays NaN; erf(x) is ±1 for |x| from 3.9192059 in f32 (about 5.9 in f64). As torch.erf and "
      "ONNX Erf. Gradient: g * 2/sqrt(pi) * exp(-x^2). Example: erf(x) for x = [0, 0.5, -1, Inf] is [0, "
      "0.5204999, -0.8427008, 1].";
#endif
#ifndef SYMFLOW_SCALAR_ONLY
  // Costs more to recompute than to read back: a repeat within one fused loop reuses the value.
  static constexpr bool costly = true;
#endif
  // f32 on the host: lane 0 of the packet form (simd::first_lane), so a SIMD body and a scalar tail
  // give the same bits. std::erf for f64 (no faster form of its accuracy) and in device code.
  template <class T>
  SYMFLOW_HD static T apply(T x) {
#if !defined(SYMFLOW_SCALAR_ONLY) && !defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float> && simd::vectorized<T>)
      return simd::first_lane<T>([](const auto& p) { return packet(p); }, x);
#endif
    return std::erf(x);
  }
#ifndef SYMFLOW_SCALAR_ONLY
  template <class T>
  static constexpr bool packet_dtype_ok = std::is_same_v<T, float>;
  // erf(|x|) = |x| N(t) / D(t), t = x^2, for |x| below 3.9192059 (the smallest float whose erf
  // rounds to 1; 1 from there on), then x's sign. N and D (degrees 5 and 5) were fitted to erf on
  // [0, 3.9192059] for the least maximum relative error (Lawson-weighted least squares in float64),
  // and their float coefficients checked against a 30-digit erf: 5.4 ulps at most (near x = 3.7, where
  // N and D's own rounding dominates), 0.9 on average; Horner's rule with fused multiply-adds where
  // the target has them.
  template <class P>
    requires std::is_same_v<typename simd::pm::unpacket_traits<P>::type, float>
  static P packet(const P& x) {
    namespace pm = simd::pm;
    const P limit = pm::pset1<P>(3.91920590f);
    const P magnitude = pm::pabs(x);
    const P a = pm::pmin(magnitude, limit);
    const P t = pm::pmul(a, a);
    P n = pm::pset1<P>(2.0506911e-06f);
    n = pm::pmadd(n, t, pm::pset1<P>(2.848855e-04f));
    n = pm::pmadd(n, t, pm::pset1<P>(3.7645013e-03f));
    n = pm::pmadd(n, t, pm::pset1<P>(5.2745398e-02f));
    n = pm::pmadd(n, t, pm::pset1<P>(1.9037683e-01f));
    n = pm::pmadd(n, t, pm::pset1<P>(1.1283791e+00f));
    P d = pm::pset1<P>(3.8098085e-05f);
    d = pm::pmadd(d, t, pm::pset1<P>(1.1623161e-03f));
    d = pm::pmadd(d, t, pm::pset1<P>(1.4966969e-02f));
    d = pm::pmadd(d, t, pm::pset1<P>(1.140974e-01f));
    d = pm::pmadd(d, t, pm::pset1<P>(5.020498e-01f));
    d = pm::pmadd(d, t, pm::pset1<P>(1.0f));
    const P one = pm::pset1<P>(1.0f);
    P r = pm::pmin(pm::pdiv(pm::pmul(a, n), d), one);
    r = pm::pselect(pm::pcmp_le(limit, magnitude), one, r);
    r = pm::por(r, pm::pand(x, pm::pset1<P>(-0.0f)));  // x's sign bit (r >= 0 before): erf(-0) = -0
    return pm::pselect(simd::nan_lanes(x), x, r);
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    using T = value_type_of<G>;
    return tuple_of(g * (T(1.12837916709551257390) * exp(-square(x))));  // 2 / sqrt(pi)
  }
#endif
};
}  // namespace ops
#ifndef SYMFLOW_SCALAR_ONLY

template <unary_operand X>
auto erf(const X& x, source_site where = source_site::current()) {
  return make_unary<ops::erf_op>(x, where);
}
#endif
}  // namespace symflow
#endif  // SYMFLOW_OPS_ERF_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(elementwise, erf_op)
#endif
