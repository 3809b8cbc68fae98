#ifndef SYMFLOW_OPS_ARGMAX_HPP
#define SYMFLOW_OPS_ARGMAX_HPP
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "../expr/derivative_rule.hpp"
#include "../expr/reduction.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"
#include "law_example.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

namespace arg_extremum_detail {
// Whether candidate c replaces the current pick v. NaN is the extreme for both argmax and argmin
// (the first NaN wins, as in NumPy and PyTorch); ties, ±0 and NaN against NaN included, keep the
// first index, or move to the last with `last`.
template <bool Largest, bool IsFloat, class T>
bool replaces(T c, T v, bool last) {
  if constexpr (IsFloat) {
    const bool cn = std::isnan(c), vn = std::isnan(v);
    if (vn) return last && cn;
    if (cn) return true;
  }
  if (c == v) return last;
  if constexpr (Largest) return v < c;
  else return c < v;
}

// The index of the extreme along the middle axis of x seen as [outer, n, inner], for each (outer,
// inner), written to out in that order.
template <bool Largest, class T>
void run(const T* x, std::int64_t* out, std::size_t outer, std::size_t n, std::size_t inner, bool last) {
  constexpr bool is_float = std::is_floating_point_v<T>;
  for (std::size_t o = 0; o < outer; ++o) {
    const T* block = x + o * n * inner;
    for (std::size_t i = 0; i < inner; ++i) {
      std::size_t best = 0;
      T v = block[i];
      for (std::size_t k = 1; k < n; ++k) {
        const T c = block[k * inner + i];
        if (replaces<Largest, is_float>(c, v, last)) {
          best = k;
          v = c;
        }
      }
      out[o * inner + i] = std::int64_t(best);
    }
  }
}
}  // namespace arg_extremum_detail

// argmax and argmin along one axis: the index (i64) of the largest (smallest) element.
template <bool Largest, std::size_t Axis, bool Keep, bool Last>
struct arg_extremum_op {
  static constexpr std::string_view name = Largest ? "argmax" : "argmin";
  // ONNX ArgMax / ArgMin, with the same attributes (i64 result, NaN the largest, as NumPy).
  static void write_onnx(onnx_node_writer& w) {
    w.add(Largest ? "ArgMax" : "ArgMin", {w.operand(0)},
          {{"axis", w.integer("axis")}, {"keepdims", std::int64_t(w.boolean("keepdims"))},
           {"select_last_index", std::int64_t(w.boolean("select_last_index"))}},
          true);
  }
  static constexpr std::array<std::string_view, 1> onnx_reads{Largest ? "ArgMax" : "ArgMin"};
  static void read_onnx(onnx_node_reader& r) {
    r.result(r.apply(name, {r.input(0)},
                     {{"axis", r.axis(r.integer("axis", 0), r.rank_of(0))}, {"keepdims", r.integer("keepdims", 1) != 0},
                      {"select_last_index", r.integer("select_last_index", 0) != 0}}));
  }
  static constexpr std::string_view doc =
      Largest ? "argmax(x), attributes axis, keepdims and select_last_index (ONNX ArgMax; in C++ "
                "argmax<Axis>(x) or argmax<Axis>(x, keepdims), Axis negative from the last): the index, "
                "as i64, of the largest element along the axis; the axis is removed, or kept with "
                "extent 1. Any dtype. NaN counts as the largest (the first NaN's index, as in NumPy "
                "and PyTorch); among equal values (-0 and +0 are equal) the first index, or the last "
                "with select_last_index. An axis of extent 0 is a shape error. No gradient (an integer "
                "result). Example: argmax along axis 1 of [[1, 3, 3], [NaN, 2, NaN]] is [1, 0]."
              : "argmin(x), attributes axis, keepdims and select_last_index (ONNX ArgMin; in C++ "
                "argmin<Axis>(x) or argmin<Axis>(x, keepdims), Axis negative from the last): the index, "
                "as i64, of the smallest element along the axis; the axis is removed, or kept with "
                "extent 1. Any dtype. NaN counts as the smallest (the first NaN's index, as in NumPy "
                "and PyTorch); among equal values (-0 and +0 are equal) the first index, or the last "
                "with select_last_index. An axis of extent 0 is a shape error. No gradient (an integer "
                "result). Example: argmin along axis 0 of [[4, 1], [2, 1]] is [1, 0].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 37>>>;
    static constexpr bool differentiable = false;
    template <class T>
    static auto of(const auto& x0) {
      return make_kernel(arg_extremum_op<Largest, 1, Keep, Last>{}, source_site{}, x0);
    }
  };
  template <class V>
  static void visit_attributes(V&& v) {
    v("axis", Axis);
    v("keepdims", Keep);
    v("select_last_index", Last);
  }
  static constexpr bool contiguous_operands = true;
  template <class X>
  using result_type = std::int64_t;
  template <class X>
  static constexpr bool accepts = true;
  template <class S>
  static constexpr bool shapes_ok = Axis < S::rank;
  template <class S>
  using result_shape = shape_from_array_t<[] {
    std::array<std::size_t, Keep ? S::rank : S::rank - 1> out{};
    for (std::size_t i = 0, j = 0; i < S::rank; ++i) {
      if (i != Axis) out[j++] = S::extents[i];
      else if (Keep) out[j++] = 1;
    }
    return out;
  }()>;

  template <class Who>
  static runtime_extents result_extents(const Who& who, const runtime_extents& in, std::size_t axis, bool keep) {
    if (in[axis] == 0) {
      runtime_extents rest = in;
      rest.erase(rest.begin() + std::ptrdiff_t(axis));
      if (element_count(rest) != 0)
        throw shape_error(who + ": axis " + std::to_string(axis) + " has extent 0 in an operand of shape " +
                          format_extents(in) + "; there is no element to pick");
    }
    runtime_extents out;
    for (std::size_t i = 0; i < in.size(); ++i)
      if (i != axis) out.push_back(in[i]);
      else if (keep) out.push_back(1);
    return out;
  }
  template <std::size_t R>
  static auto infer_extents(const auto& who, const extents_t<R>& in) {
    const auto e = result_extents(who, runtime_extents(in.begin(), in.end()), Axis, Keep);
    extents_t<Keep ? R : R - 1> out{};
    std::copy(e.begin(), e.end(), out.begin());
    return out;
  }
  // Runtime form (graph interpreter and builder): the attributes are values.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    const std::size_t axis = runtime_axis(who, a.integer("axis"), in.at(0).size());
    return result_extents(who, in.at(0), axis, a.boolean("keepdims"));
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const std::size_t axis = runtime_axis(std::string(name), a.integer("axis"), in.at(0).extents.size());
    const bool last = a.boolean("select_last_index");
    visit_compute_dtype(in[0].type, [&](auto zero) {
      using T = decltype(zero);
      run_on(static_cast<const T*>(in[0].data), out.as<std::int64_t>(), in[0].extents, axis, last);
    });
  }
  template <class T>
  static void run_on(const T* x, std::int64_t* out, const runtime_extents& in, std::size_t axis, bool last) {
    std::size_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < axis; ++i) outer *= in[i];
    for (std::size_t i = axis + 1; i < in.size(); ++i) inner *= in[i];
    arg_extremum_detail::run<Largest>(x, out, outer, in[axis], inner, last);
  }
  template <class T, class Out, class X>
  static void run_cpu(const Out& out, const X& x) {
    run_on(x.data(), out.data(), runtime_extents(x.extents().begin(), x.extents().end()), Axis, Last);
  }
  template <class Y, class TX, class X>
  static auto tangent(const Y&, const TX&, const X&) {
    return no_gradient{};
  }
  // Derivative rule (expr/derivative_rule.hpp): piecewise constant, so nothing flows back.
  static auto derivative(const auto&, const auto&, const auto&, const auto&) { return tuple_of(no_gradient{}); }
};
template <std::size_t Axis, bool Keep = false, bool Last = false>
using argmax_op = arg_extremum_op<true, Axis, Keep, Last>;
template <std::size_t Axis, bool Keep = false, bool Last = false>
using argmin_op = arg_extremum_op<false, Axis, Keep, Last>;
}  // namespace ops

namespace arg_extremum_detail {
template <bool Largest, int Axis, bool Keep, expression X>
auto make(const X& x, source_site where) {
  constexpr int rank = int(shape_of<X>::rank);
  static_assert(Axis >= -rank && Axis < rank, "symflow: argmax/argmin: the axis is outside the operand's rank");
  if constexpr (Axis >= -rank && Axis < rank) {
    constexpr std::size_t axis = std::size_t(Axis < 0 ? Axis + rank : Axis);
    return make_kernel(ops::arg_extremum_op<Largest, axis, Keep, false>{}, where, x);
  }
}
}  // namespace arg_extremum_detail

// argmax<Axis>(x): the index of the largest element along Axis (negative: from the last), as i64.
template <int Axis, expression X>
auto argmax(const X& x, source_site where = source_site::current()) {
  return arg_extremum_detail::make<true, Axis, false>(x, where);
}
template <int Axis, expression X>
auto argmax(const X& x, keepdims_t, source_site where = source_site::current()) {
  return arg_extremum_detail::make<true, Axis, true>(x, where);
}
// argmin<Axis>(x): the index of the smallest element along Axis (negative: from the last), as i64.
template <int Axis, expression X>
auto argmin(const X& x, source_site where = source_site::current()) {
  return arg_extremum_detail::make<false, Axis, false>(x, where);
}
template <int Axis, expression X>
auto argmin(const X& x, keepdims_t, source_site where = source_site::current()) {
  return arg_extremum_detail::make<false, Axis, true>(x, where);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_ARGMAX_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, argmax_op<0>)
SYMFLOW_LISTED(kernel, argmin_op<0, true, true>)
#endif
