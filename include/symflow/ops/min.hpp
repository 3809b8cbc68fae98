#pragma once
#include <limits>

#include "../expr/reduction.hpp"
#include "packet_math.hpp"

namespace symflow {
namespace ops {
struct min_op {
  static constexpr std::string_view name = "min";
  template <class T>
  static constexpr T identity() {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  }
  template <class T>
  SYMFLOW_HD static T combine(T a, T b) {
    return a <= b ? a : b;
  }
  template <class P>
  static P packet_combine(const P& a, const P& b) {
    return simd::pm::pmin(a, b);
  }
  template <class P>
  static auto packet_reduce(const P& p) {
    return simd::pm::predux_min(p);
  }
  template <class T>
  SYMFLOW_HD static T finish(T acc, [[maybe_unused]] std::size_t count) {
    return acc;
  }
};
}  // namespace ops

inline constexpr reduction_function<ops::min_op> min{};
}  // namespace symflow
