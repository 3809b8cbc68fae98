#ifndef SYMFLOW_OPS_DROPOUT_HPP
#define SYMFLOW_OPS_DROPOUT_HPP
// dropout(x, rate, seed): zeroes each element with probability `rate` and scales the kept ones by
// 1/(1-rate), so the expected value is unchanged. For training graphs only: an inference graph
// leaves the op out (dropout with rate 0 is the identity, at the cost of a copy).
//
// The mask is a pure function of (seed, element index), so any backend can draw the same one and
// the gradient (the same op applied to the adjoint) reuses it without storing it. Bit for bit:
//
//   i     = the element's row-major index in x (0, 1, ..., x.size()-1)
//   z     = seed + (i + 1) * 0x9E3779B97F4A7C15          (all arithmetic on uint64, wrapping)
//   z     = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
//   z     = (z ^ (z >> 27)) * 0x94D049BB133111EB
//   z     =  z ^ (z >> 31)                               (the i-th output of splitmix64(seed))
//   u     = double(z >> 11) * 2^-53                      (exact: a 53-bit integer times a power of 2)
//   keep  = u >= rate                                    (a double comparison, exact on IEEE hardware)
//   out_i = keep ? x_i * scale : 0, scale = T(1.0 / (1.0 - rate)) computed in double, then rounded to T
//
// The index is within one tensor, so the same seed gives every batch the same mask: a training loop
// passes a new seed per step (and per dropout layer).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/tensor.hpp"
#include "../core/parallel.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "conv2d_geometry.hpp"
#include "law_example.hpp"

namespace symflow {

SYMFLOW_HD constexpr std::uint64_t dropout_bits(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
SYMFLOW_HD constexpr bool dropout_keeps(std::uint64_t seed, std::uint64_t index, double rate) {
  return double(dropout_bits(seed, index) >> 11) * 0x1.0p-53 >= rate;
}

namespace ops {
namespace dropout_detail {
inline void check_rate(const std::string& who, double rate) {
  if (!(rate >= 0.0 && rate < 1.0))
    throw value_error(who + ": the dropout rate must be in [0, 1), not " + std::to_string(rate));
}
template <class T>
void run(const T* x, T* out, std::size_t n, double rate, std::uint64_t seed) {
  const T scale = T(1.0 / (1.0 - rate));
  cpu::parallel_ranges(n, 1, [&](std::size_t, std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) out[i] = dropout_keeps(seed, i, rate) ? x[i] * scale : T(0);
  });
}
}  // namespace dropout_detail

struct dropout_op {
  static constexpr std::string_view name = "dropout";
  static constexpr std::string_view doc =
      "dropout(x), attributes rate (in [0, 1), else a value error) and seed: zeroes each element with "
      "probability rate and multiplies the others by scale = 1 / (1 - rate) (computed in double, then "
      "rounded to the element type), so the expected value is unchanged. The mask is a pure function "
      "of seed and the element's row-major index (element i is kept when the i-th splitmix64 output "
      "from seed, as a 53-bit fraction u, has u >= rate; the exact formula is at the top of "
      "ops/dropout.hpp), so every backend draws the same mask and the same seed gives the same mask on "
      "every call: pass a new seed per step and per layer. A dropped element is +0 even if it was NaN "
      "or Inf; a kept one is x * scale. rate 0 keeps everything (a copy). f32 or f64. Gradient: the "
      "same op, rate and seed applied to g. Example: rate 0.5 and seed 0 turn x = [1, 2, 3, 4] into "
      "[2, 0, 0, 8].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 37>>>;
    template <class T>
    static auto of(const auto& x0) { return dropout(x0, 0.25, 7); }
  };
  static constexpr bool contiguous_operands = true;
  double rate = 0;
  std::uint64_t seed = 0;
  bool operator==(const dropout_op&) const = default;  // ops differing in seed must not be merged
  template <class V>
  void visit_attributes(V&& v) const {
    static_assert(sizeof(std::size_t) == sizeof(std::uint64_t), "symflow: seeds are stored as 64-bit integers");
    v("rate", rate);
    v("seed", std::size_t(seed));
  }

  template <class X>
  using result_type = X;
  template <class X>
  static constexpr bool accepts = std::is_floating_point_v<X>;  // dtype rule (ir/op_registry.hpp)
  template <class S>
  static constexpr bool shapes_ok = true;
  template <class S>
  using result_shape = S;
  template <std::size_t R>
  extents_t<R> infer_extents(const auto& who, const extents_t<R>& x) const {
    dropout_detail::check_rate(std::string(who), rate);
    return x;
  }
  template <class T, class Out, class X>
  void run_cpu(const Out& out, const X& x) const {
    dropout_detail::run<T>(x.data(), out.data(), x.size(), rate, seed);
  }
  // Derivative rule (expr/derivative_rule.hpp): the same op (mask and scale) applied to the adjoint.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto&) {
    return tuple_of(apply_kernel(self, g));
  }
  // The same mask and scale applied to a tangent.
  template <class Y, class TX, class X>
  auto tangent(const Y&, const TX& tx, const X&) const {
    if constexpr (is_no_gradient_v<TX>) return no_gradient{};
    else return dropout(tx, rate, seed);
  }

  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 1, who);
    dropout_detail::check_rate(who, a.number("rate"));
    return in[0];
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    conv_detail::with_float_element(out.type, name, [&](auto t) {
      using T = decltype(t);
      dropout_detail::run<T>(static_cast<const T*>(in[0].data), out.as<T>(), element_count(in[0].extents),
                             a.number("rate"), std::uint64_t(a.integer("seed")));
    });
  }
};
}  // namespace ops

// Training-time dropout; see the top of this file for the exact mask.
template <expression X>
auto dropout(const X& x, double rate, std::uint64_t seed, source_site where = source_site::current()) {
  static_assert(ops::dropout_op::accepts<value_type_of<X>>, "symflow: dropout needs a floating-point operand");
  ops::dropout_detail::check_rate("dropout", rate);
  return make_kernel(ops::dropout_op{rate, seed}, where, x);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_DROPOUT_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, dropout_op)
#endif
