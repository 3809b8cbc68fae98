#pragma once
// The text every generated kernel starts with (an in-memory header for NVRTC, never included by a
// host compiler). NVRTC has no C++ standard library; the op files' scalar functions call `std::exp`,
// `std::max`, ... and name their dtype-rule base classes. With SYMFLOW_SCALAR_ONLY defined, an op file
// (include/symflow/ops/<op>.hpp) keeps only its struct, its `name` and its SYMFLOW_HD `apply`: every
// other member and include is behind `#ifndef SYMFLOW_SCALAR_ONLY` (a reduction's file keeps its
// `identity`, SYMFLOW_HD `combine` and `finish`; an op built on another op file's base, as ceil on
// floor's rounding_op, keeps that include: op_headers.hpp supplies it). This prelude supplies what that
// remaining part names — it restates no op's math:
//  - std:: names for CUDA's device math overloads (float and double), and std::max/min with the
//    standard library's semantics (`max(a, b)` is `a < b ? b : a`, which differs from fmax on NaN);
//  - a std::string_view that only holds the op's name; std::size_t; std::numeric_limits for the
//    element types (what reductions' identity and finish name: infinity, lowest, max, quiet_NaN;
//    infinity and NaN by their bits, NVRTC has no __builtin_huge_val);
//  - empty stand-ins for the dtype-rule bases (the host computes every node's dtype), comparisons'
//    comparison_result (ops/comparison.hpp) among them.

namespace symflow::cuda::nvrtc_detail {

inline constexpr const char* prelude_name = "symflow_nvrtc_prelude.hpp";

inline constexpr const char* prelude_text = R"symflow(#pragma once
#define SYMFLOW_SCALAR_ONLY 1
#include "symflow/core/config.hpp"
namespace std {
class string_view {
  const char* data_;
 public:
  __host__ __device__ constexpr string_view(const char* s) : data_(s) {}
};
using ::exp; using ::exp2; using ::expm1; using ::log; using ::log2; using ::log10; using ::log1p;
using ::sin; using ::cos; using ::tan; using ::asin; using ::acos; using ::atan; using ::atan2;
using ::sinh; using ::cosh; using ::tanh; using ::asinh; using ::acosh; using ::atanh;
using ::sqrt; using ::rsqrt; using ::cbrt; using ::pow; using ::abs; using ::fabs; using ::floor; using ::ceil;
using ::round; using ::trunc; using ::fmod; using ::erf; using ::erfc; using ::tgamma; using ::lgamma;
using ::fmin; using ::fmax; using ::copysign; using ::isnan; using ::isinf; using ::isfinite;
using size_t = decltype(sizeof(0));
template <class T> struct numeric_limits;
template <> struct numeric_limits<float> {
  static constexpr bool has_infinity = true;
  __host__ __device__ static float infinity() { return __int_as_float(0x7f800000); }
  __host__ __device__ static float quiet_NaN() { return __int_as_float(0x7fc00000); }
  __host__ __device__ static constexpr float max() { return 3.40282346638528859811704183484516925e+38f; }
  __host__ __device__ static constexpr float lowest() { return -max(); }
};
template <> struct numeric_limits<double> {
  static constexpr bool has_infinity = true;
  __host__ __device__ static double infinity() { return __longlong_as_double(0x7ff0000000000000ll); }
  __host__ __device__ static double quiet_NaN() { return __longlong_as_double(0x7ff8000000000000ll); }
  __host__ __device__ static constexpr double max() { return 1.79769313486231570814527423731704357e+308; }
  __host__ __device__ static constexpr double lowest() { return -max(); }
};
template <class T, T Lo, T Hi> struct integer_limits {
  static constexpr bool has_infinity = false;
  __host__ __device__ static constexpr T infinity() { return T(0); }
  __host__ __device__ static constexpr T quiet_NaN() { return T(0); }
  __host__ __device__ static constexpr T max() { return Hi; }
  __host__ __device__ static constexpr T lowest() { return Lo; }
};
template <> struct numeric_limits<int> : integer_limits<int, -2147483647 - 1, 2147483647> {};
template <> struct numeric_limits<long long>
    : integer_limits<long long, -9223372036854775807ll - 1, 9223372036854775807ll> {};
template <> struct numeric_limits<long>  // the host spells i64 "long" (LP64), as device code does
    : integer_limits<long, -9223372036854775807l - 1, 9223372036854775807l> {};
template <> struct numeric_limits<bool> : integer_limits<bool, false, true> {};
template <class T>
__host__ __device__ constexpr const T& max(const T& a, const T& b) { return (a < b) ? b : a; }
template <class T>
__host__ __device__ constexpr const T& min(const T& a, const T& b) { return (b < a) ? b : a; }
}  // namespace std
namespace symflow {
struct same_dtype_result {};
struct floating_result : same_dtype_result {};
struct mask_result {};
struct comparison_result : mask_result {};
}  // namespace symflow
)symflow";

}  // namespace symflow::cuda::nvrtc_detail
