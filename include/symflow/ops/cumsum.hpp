#ifndef SYMFLOW_OPS_CUMSUM_HPP
#define SYMFLOW_OPS_CUMSUM_HPP
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "../expr/derivative_rule.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"
#include "law_example.hpp"
#include "sum.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

namespace cumsum_detail {
// Floats accumulate in double, so each prefix is the correctly rounded running sum whatever its
// length (as PyTorch's CPU cumsum); integers wrap, by sum's own combine step.
template <class T>
using accumulator = std::conditional_t<std::is_floating_point_v<T>, double, T>;

// Running sums along the middle axis of x seen as [outer, n, inner]: out[k] = x[0] + ... + x[k]
// (exclusive: up to x[k - 1], so out[0] = 0), from the other end when `reverse`.
template <class T>
void run(const T* x, T* out, std::size_t outer, std::size_t n, std::size_t inner, bool exclusive, bool reverse) {
  using A = accumulator<T>;
  std::vector<A> acc(inner);
  for (std::size_t o = 0; o < outer; ++o) {
    const T* xs = x + o * n * inner;
    T* ys = out + o * n * inner;
    std::fill(acc.begin(), acc.end(), A(0));
    for (std::size_t step = 0; step < n; ++step) {
      const std::size_t k = reverse ? n - 1 - step : step;
      const T* xk = xs + k * inner;
      T* yk = ys + k * inner;
      for (std::size_t i = 0; i < inner; ++i) {
        const A before = acc[i];
        acc[i] = sum_op::combine(acc[i], A(xk[i]));
        yk[i] = T(exclusive ? before : acc[i]);
      }
    }
  }
}
}  // namespace cumsum_detail

// cumsum along one axis: running sums (ONNX CumSum). Exclusive and Reverse are 0 or 1, integer
// attributes as in ONNX.
template <std::size_t Axis, int Exclusive, int Reverse>
struct cumsum_op {
  static constexpr std::string_view name = "cumsum";
  // ONNX CumSum, the axis as an input.
  static void write_onnx(onnx_node_writer& w) {
    w.add("CumSum", {w.operand(0), w.int64s({w.integer("axis")})},
          {{"exclusive", w.integer("exclusive")}, {"reverse", w.integer("reverse")}}, true);
  }
  static constexpr std::array<std::string_view, 1> onnx_reads{"CumSum"};
  static void read_onnx(onnx_node_reader& r) {
    const std::vector<std::int64_t> axis = r.constant_integers(1);
    if (axis.size() != 1) r.refuse("CumSum's axis is not one value");
    r.result(r.apply(name, {r.input(0)},
                     {{"axis", r.axis(axis[0], r.rank_of(0))}, {"exclusive", std::int64_t(r.integer("exclusive", 0) != 0)},
                      {"reverse", std::int64_t(r.integer("reverse", 0) != 0)}}));
  }
  static constexpr std::string_view doc =
      "cumsum(x), attributes axis, exclusive and reverse (ONNX CumSum, numpy.cumsum, torch.cumsum; in "
      "C++ cumsum<Axis>(x), cumsum<Axis, Exclusive, Reverse>(x), Axis negative from the last): the "
      "running sums of x along the axis, of x's shape: y[k] = x[0] + ... + x[k]; exclusive leaves x[k] "
      "out (y[0] = 0); reverse sums from the other end (y[k] = x[k] + ... + x[n - 1]). f32, f64, i32 "
      "or i64. Floats accumulate in double and each prefix is rounded once to the element type, so a "
      "NaN or an Inf reaches every later prefix (+Inf then -Inf gives NaN); integers wrap (two's "
      "complement), as add does. Gradient: cumsum of g along the same axis in the other direction, "
      "exclusive as the forward was. Example: cumsum along axis 1 of [[1, 2, 3], [4, 5, 6]] is [[1, "
      "3, 6], [4, 9, 15]]; exclusive and reverse, [[5, 3, 0], [11, 6, 0]].";
  // The law tests' instance of this op (ops/law_example.hpp): both attributes set, so the laws'
  // gradient check runs the rule that flips the direction.
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 7, 5>>>;
    template <class T>
    static auto of(const auto& x0) {
      return make_kernel(cumsum_op<1, 1, 1>{}, source_site{}, x0);
    }
  };
  // This op with one attribute changed (expr/derivative_rule.hpp, with_integer).
  template <fixed_string Key, std::int64_t V>
  using with_attribute = std::conditional_t<Key.view() == "reverse", cumsum_op<Axis, Exclusive, int(V)>,
                                          cumsum_op<Axis, Key.view() == "exclusive" ? int(V) : Exclusive, Reverse>>;
  template <class V>
  static constexpr void visit_attributes(V&& v) {
    v("axis", Axis);
    v("exclusive", std::size_t(Exclusive));
    v("reverse", std::size_t(Reverse));
  }
  static constexpr bool contiguous_operands = true;
  template <class X>
  using result_type = X;
  template <class X>
  static constexpr bool accepts = std::is_arithmetic_v<X> && !std::is_same_v<X, bool>;
  template <class S>
  static constexpr bool shapes_ok = Axis < S::rank;
  template <class S>
  using result_shape = S;

  template <std::size_t R>
  static extents_t<R> infer_extents(const auto&, const extents_t<R>& in) {
    return in;
  }
  template <class T>
  static void run_on(const T* x, T* out, const runtime_extents& in, std::size_t axis, bool exclusive, bool reverse) {
    std::size_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < axis; ++i) outer *= in[i];
    for (std::size_t i = axis + 1; i < in.size(); ++i) inner *= in[i];
    cumsum_detail::run(x, out, outer, in[axis], inner, exclusive, reverse);
  }
  template <class T, class Out, class X>
  static void run_cpu(const Out& out, const X& x) {
    run_on(x.data(), out.data(), runtime_extents(x.extents().begin(), x.extents().end()), Axis, Exclusive != 0,
           Reverse != 0);
  }
  // Runtime form (graph interpreter and builder): the attributes are values.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    runtime_axis(who, a.integer("axis"), in.at(0).size());
    return in.at(0);
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const std::size_t axis = runtime_axis(std::string(name), a.integer("axis"), in.at(0).extents.size());
    const bool exclusive = a.integer("exclusive") != 0, reverse = a.integer("reverse") != 0;
    visit_compute_dtype(in[0].type, [&](auto zero) {
      using T = decltype(zero);
      if constexpr (std::is_same_v<T, bool>)
        throw value_error("cumsum: takes f32, f64, i32 or i64 operands, not bool");
      else
        run_on(static_cast<const T*>(in[0].data), out.as<T>(), in[0].extents, axis, exclusive, reverse);
    });
  }
  // Linear: the tangent is the same running sum of the operand's tangent.
  template <class Y, class TX, class X>
  static auto tangent(const Y&, const TX& tx, const X&) {
    if constexpr (is_no_gradient_v<TX>) return no_gradient{};
    else return make_kernel(cumsum_op{}, source_site{}, tx);
  }
  // Derivative rule (expr/derivative_rule.hpp): y[k] sums x over a prefix, so x[j]'s adjoint sums g
  // over the suffix that read it: the same op run the other way (exclusive stays exclusive).
  static auto derivative(const auto& self, const auto& g, const auto&, const auto&) {
    const auto other_way = lift([](std::int64_t r) { return std::int64_t(1 - r); }, integer<"reverse">(self));
    return tuple_of(apply_kernel(with_integer<"reverse">(self, other_way), g));
  }
};
}  // namespace ops

// cumsum<Axis>(x): running sums along Axis (negative: from the last); cumsum<Axis, true>(x) leaves
// each element out of its own sum, cumsum<Axis, Exclusive, true>(x) sums from the end.
template <int Axis, bool Exclusive = false, bool Reverse = false, expression X>
auto cumsum(const X& x, source_site where = source_site::current()) {
  constexpr int rank = int(shape_of<X>::rank);
  static_assert(Axis >= -rank && Axis < rank, "symflow: cumsum: the axis is outside the operand's rank");
  static_assert(std::is_arithmetic_v<value_type_of<X>> && !std::is_same_v<value_type_of<X>, bool>,
                "symflow: cumsum: the operand must be f32, f64, i32 or i64");
  if constexpr (Axis >= -rank && Axis < rank) {
    constexpr std::size_t axis = std::size_t(Axis < 0 ? Axis + rank : Axis);
    return make_kernel(ops::cumsum_op<axis, int(Exclusive), int(Reverse)>{}, where, x);
  }
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_CUMSUM_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, cumsum_op<0, 0, 0>)
#endif
