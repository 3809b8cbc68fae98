#pragma once
// Rounding to the 16-bit storage floats (Eigen::half, Eigen::bfloat16) in one step, as NumPy and
// the IEEE conversions do. Eigen converts from float; converting a double or a 64-bit integer
// through float rounds twice, and the second rounding can break a tie the first one made (the f64
// 1 + 2^-11 + 2^-40 rounds to the f32 1 + 2^-11, which ties to the f16 1 instead of rounding up).
// Rounding to float "to odd" first (the neighbour whose last bit is 1 when the value falls between
// two floats) keeps the sticky information: float has more than two bits beyond f16's and bf16's
// significands, so the final round-to-nearest-even is then exact (Boldo and Melquiond, 2008).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "eigen.hpp"

namespace symflow {

template <class T>
inline constexpr bool is_storage_float_v = std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

namespace detail {
// x (a double or an integer, converted to long double exactly on x86-64) rounded to float to odd.
template <class From>
float round_to_odd_float(From x) {
  const long double wide = static_cast<long double>(x);
  float f = static_cast<float>(wide);
  if (std::isfinite(f) && static_cast<long double>(f) != wide) {
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    if ((bits & 1u) == 0)
      f = std::nextafter(f, wide > static_cast<long double>(f) ? std::numeric_limits<float>::infinity()
                                                                : -std::numeric_limits<float>::infinity());
  }
  return f;
}
}  // namespace detail

// x (a float, double, integer or bool) as To (Eigen::half or Eigen::bfloat16), rounded once to
// nearest even; overflow gives ±Inf, NaN stays NaN, -0 stays -0.
template <class To, class From>
To round_to_storage_float(From x) {
  static_assert(is_storage_float_v<To>);
  if constexpr (std::is_same_v<From, bool>) return To(x);
  else if constexpr (std::is_same_v<From, float>) return To(x);
  else if constexpr (std::is_floating_point_v<From>) {
    if (std::isnan(x)) return To(static_cast<float>(x));
    return To(detail::round_to_odd_float(x));
  } else {
    return To(detail::round_to_odd_float(x));
  }
}

}  // namespace symflow
