#pragma once
// The text every generated kernel starts with (an in-memory header for NVRTC, never included by a
// host compiler). NVRTC has no C++ standard library; the op files' scalar functions call `std::exp`,
// `std::max`, ... and name their dtype-rule base classes. With SYMFLOW_SCALAR_ONLY defined, an op file
// (include/symflow/ops/<op>.hpp) keeps only its struct, its `name` and its SYMFLOW_HD `apply`: every
// other member and include is behind `#ifndef SYMFLOW_SCALAR_ONLY`. This prelude supplies what that
// remaining part names — it restates no op's math:
//  - std:: names for CUDA's device math overloads (float and double), and std::max/min with the
//    standard library's semantics (`max(a, b)` is `a < b ? b : a`, which differs from fmax on NaN);
//  - a std::string_view that only holds the op's name;
//  - empty stand-ins for the dtype-rule bases (the host computes every node's dtype).

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
template <class T>
__host__ __device__ constexpr const T& max(const T& a, const T& b) { return (a < b) ? b : a; }
template <class T>
__host__ __device__ constexpr const T& min(const T& a, const T& b) { return (b < a) ? b : a; }
}  // namespace std
namespace symflow {
struct same_dtype_result {};
struct floating_result : same_dtype_result {};
struct mask_result {};
}  // namespace symflow
)symflow";

}  // namespace symflow::cuda::nvrtc_detail
