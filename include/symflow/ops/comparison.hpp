#ifndef SYMFLOW_OPS_COMPARISON_HPP
#define SYMFLOW_OPS_COMPARISON_HPP
// What the six comparison ops share (equal.hpp, not_equal.hpp, greater.hpp, greater_equal.hpp,
// less.hpp, less_equal.hpp): each derives from comparison_result, and its own file holds only its
// name, its scalar function (an IEEE comparison: false where either operand is NaN, except
// not_equal; -0 == +0) and its operator or function. It defines no op, so it has no entry in the
// op list.
//
// Code generation for the GPU reads an op file with SYMFLOW_SCALAR_ONLY defined and no other header
// of symflow's at hand: op files include this one outside that mode only, and the NVRTC prelude
// (cuda/include/symflow/cuda/nvrtc/prelude.hpp) supplies comparison_result's stand-in there.
#include "../expr/elementwise.hpp"
#include "packet_math.hpp"

namespace symflow {

// A comparison of two operands of one dtype: a bool mask, with no packet form of its own (a bool
// has no SIMD lane); each comparison's file gives `mask_packet`, its result as a lane mask over its
// operands' packets, which a select in a fused loop reads (eval/cpu/node_evaluators.hpp). No gradient (it is piecewise constant, so neither operand gets an adjoint).
struct comparison_result : mask_result {
  static constexpr bool is_comparison = true;

  // Derivative rule: adjoints of (a, b) given the upstream adjoint g and this node's value y.
  template <class G, class Y, class A, class B>
  static auto gradient(const G&, const Y&, const A&, const B&) {
    return tuple_of(no_gradient{}, no_gradient{});
  }
};

}  // namespace symflow
#endif  // SYMFLOW_OPS_COMPARISON_HPP
