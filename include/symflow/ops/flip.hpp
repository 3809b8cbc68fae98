#ifndef SYMFLOW_OPS_FLIP_HPP
#define SYMFLOW_OPS_FLIP_HPP
// flip<Axis>(x): x with one axis reversed (torch.flip, numpy.flip). With slice's step it gives every
// slice a negative step takes (ONNX Slice with steps < 0, x[b:e:-s] in Python): a flip, then a slice.
// A kernel rather than a view because layouts have unsigned strides.
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../expr/derivative_rule.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"
#include "law_example.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

namespace flip_detail {
// x seen as [outer, n, inner] with elements of `size` bytes: out[o, k] = x[o, n - 1 - k].
inline void run(const void* x, void* out, const runtime_extents& extents, std::size_t axis, std::size_t size) {
  std::size_t outer = 1, inner = size;
  for (std::size_t i = 0; i < axis; ++i) outer *= extents[i];
  for (std::size_t i = axis + 1; i < extents.size(); ++i) inner *= extents[i];
  const std::size_t n = extents[axis];
  const char* from = static_cast<const char*>(x);
  char* to = static_cast<char*>(out);
  if (inner == 0) return;
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t k = 0; k < n; ++k) std::memcpy(to + (o * n + k) * inner, from + (o * n + n - 1 - k) * inner, inner);
}
}  // namespace flip_detail

template <std::size_t Axis>
struct flip_op {
  static constexpr std::string_view name = "flip";
  // ONNX has no flip: a Slice with step -1 from the last index to before the first.
  static void write_onnx(onnx_node_writer& w) {
    w.add("Slice", {w.operand(0), w.int64s({-1}), w.int64s({std::numeric_limits<std::int64_t>::min()}),
                    w.int64s({w.integer("axis")}), w.int64s({-1})}, {}, true);
  }
  static constexpr std::string_view doc =
      "flip(x), attribute axis (in C++ flip<Axis>(x), negative from the last): x with the order of "
      "its indices along axis reversed, y[..., k, ...] = x[..., n - 1 - k, ...] (torch.flip, "
      "numpy.flip); x's shape and dtype (any dtype), values keep their bits. A slice with a negative "
      "step (ONNX Slice, x[b:e:-s] in Python) is flip then slice: indices b, b - s, ... above e of an "
      "axis of extent n are the indices n - 1 - b, n - 1 - b + s, ... below n - 1 - e of the flipped "
      "axis. Gradient: flip of g along the same axis. Example: flip along axis 1 of [[1, 2, 3], [4, 5, "
      "6]] is [[3, 2, 1], [6, 5, 4]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 7, 3>>>;
    template <class T>
    static auto of(const auto& x0) { return flip<1>(x0); }
  };
  template <class V>
  static constexpr void visit_attributes(V&& v) {
    v("axis", Axis);
  }
  static constexpr bool contiguous_operands = true;
  template <class X>
  using result_type = X;
  template <class X>
  static constexpr bool accepts = true;  // dtype rule (ir/op_registry.hpp): any dtype
  template <class S>
  static constexpr bool shapes_ok = Axis < S::rank;
  template <class S>
  using result_shape = S;

  template <std::size_t R>
  static extents_t<R> infer_extents(const auto&, const extents_t<R>& in) {
    return in;
  }
  template <class T, class Out, class X>
  static void run_cpu(const Out& out, const X& x) {
    flip_detail::run(x.data(), out.data(), runtime_extents(x.extents().begin(), x.extents().end()), Axis, sizeof(T));
  }
  // Runtime form (graph interpreter and builder): the axis is a value.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    runtime_axis(who, a.integer("axis"), in.at(0).size());
    return in.at(0);
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    const std::size_t axis = runtime_axis(std::string(name), a.integer("axis"), in.at(0).extents.size());
    flip_detail::run(in[0].data, out.data, in[0].extents, axis, dtype_size(out.type));
  }
  // Linear: the tangent is the operand's tangent flipped.
  template <class Y, class TX, class X>
  static auto tangent(const Y&, const TX& tx, const X&) {
    if constexpr (is_no_gradient_v<TX>) return no_gradient{};
    else return make_kernel(flip_op{}, source_site{}, tx);
  }
  // Derivative rule (expr/derivative_rule.hpp): a permutation of indices, its own inverse.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto&) {
    return tuple_of(apply_kernel(self, g));
  }
};
}  // namespace ops

// flip<Axis>(x): x reversed along Axis (negative: from the last).
template <int Axis, expression X>
auto flip(const X& x, source_site where = source_site::current()) {
  constexpr int rank = int(shape_of<X>::rank);
  static_assert(Axis >= -rank && Axis < rank, "symflow: flip: the axis is outside the operand's rank");
  if constexpr (Axis >= -rank && Axis < rank)
    return make_kernel(ops::flip_op<std::size_t(Axis < 0 ? Axis + rank : Axis)>{}, where, x);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_FLIP_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, flip_op<0>)
#endif
