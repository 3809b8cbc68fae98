#pragma once
#include <cmath>

#include "../expr/elementwise.hpp"
#include "packet_math.hpp"

namespace symflow {
namespace ops {
struct softplus_op : floating_result {
  static constexpr std::string_view name = "softplus";
  template <class T>
  SYMFLOW_HD static T apply(T x) {
    return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x)));
  }
  template <class P>
  static P packet(const P& x) {
    return simd::pm::padd(simd::pm::pmax(x, simd::pm::pzero(x)), simd::pm::plog1p(simd::pm::pexp(simd::pm::pnegate(simd::pm::pabs(x)))));
  }
  // Derivative rule: adjoint of the operand given the upstream adjoint g and this node's value y.
  template <class G, class Y, class X>
  static auto gradient(const G& g, [[maybe_unused]] const Y& y, [[maybe_unused]] const X& x) {
    return std::tuple{g * sigmoid(x)};
  }
};
}  // namespace ops

template <expression X>
auto softplus(const X& x, std::source_location where = std::source_location::current()) {
  return make_unary<ops::softplus_op>(x, where);
}
}  // namespace symflow
