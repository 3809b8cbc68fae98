#ifndef SYMFLOW_OPS_ONE_HOT_HPP
#define SYMFLOW_OPS_ONE_HOT_HPP
#include <optional>
#include <vector>
#include <algorithm>

#include "../expr/derivative_rule.hpp"
#include "../expr/structural.hpp"
#include "../expr/runtime_forms.hpp"
#include "law_example.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

// Integer labels of shape S -> S + [Depth] with 1 at the label and 0 elsewhere. A label outside
// [0, Depth) gives a row of zeros (as TensorFlow does), so padding labels such as -1 are harmless.
template <std::size_t Depth, class To>
struct one_hot_op {
  static constexpr std::string_view name = "one_hot";
  static constexpr std::string_view doc =
      "one_hot(labels), attributes depth and to (the result dtype; in C++ one_hot<Depth, To = float>): "
      "integer labels (i32 or i64) of shape S give a tensor of shape S + [depth] with 1 at each "
      "label's index and 0 elsewhere. A label outside [0, depth) (such as -1 for padding) gives a row "
      "of zeros, as TensorFlow's one_hot does, never an error. No gradient (its operand is integer). "
      "Example: one_hot with depth 3 of [0, 2, -1] is [[1, 0, 0], [0, 0, 1], [0, 0, 0]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::labels<shape<dyn, 4>, -2, 7>>;
    template <class T>
    static auto of(const auto& labels) { return one_hot<5, T>(labels); }
  };
  // Attributes for the graph value (graph/).
  template <class V>
  static void visit_attributes(V&& v) {
    v("depth", Depth);
    v("to", dtype_v<To>);
  }
  template <class U>
  using with_float_dtype = std::conditional_t<std::is_floating_point_v<To>, one_hot_op<Depth, U>, one_hot_op>;
  static constexpr bool contiguous_operands = true;
  template <class Label>
  using result_type = To;
  // Its dtype rule (ir/op_registry.hpp): integer labels; the result's dtype is the attribute `to`.
  template <class Label>
  static constexpr bool accepts = std::is_integral_v<Label> && !std::is_same_v<Label, bool>;
  template <class S>
  static constexpr bool shapes_ok = true;
  template <class S>
  using result_shape = shape_from_array_t<[] {
    std::array<std::size_t, S::rank + 1> out{};
    for (std::size_t i = 0; i < S::rank; ++i) out[i] = S::extents[i];
    out[S::rank] = Depth;
    return out;
  }()>;

  template <std::size_t R>
  static extents_t<R + 1> infer_extents(const auto&, const extents_t<R>& in) {
    extents_t<R + 1> out{};
    std::copy(in.begin(), in.end(), out.begin());
    out[R] = Depth;
    return out;
  }
  // ONNX OneHot counts negative indices from the end, where a negative label here is a zero row:
  // the labels, as int64, become `depth` where negative (outside [-depth, depth): a row of the off
  // value there too); OneHot's values are [0, 1] in int64, cast to `to`.
  static void write_onnx(onnx_node_writer& w) {
    const std::int64_t depth = w.integer("depth");
    if (depth <= 0) w.refuse("ONNX's OneHot needs a depth of at least 1");
    const std::string labels = w.add("Cast", {w.operand(0)}, {{"to", std::int64_t(dtype_info_of(dtype::i64).onnx)}});
    const std::string negative = w.add("Less", {labels, w.scalar(dtype::i64, 0)});
    const std::string index = w.add("Where", {negative, w.scalar(dtype::i64, double(depth)), labels});
    const std::string hot = w.add("OneHot", {index, w.int64s({depth}), w.int64s({0, 1})}, {{"axis", std::int64_t(-1)}});
    w.add("Cast", {hot}, {{"to", std::int64_t(dtype_info_of(w.dtype_of("to")).onnx)}}, true);
  }
  // Runtime form (graph interpreter and builder): the depth and the result dtype are values.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs& a, const std::vector<runtime_extents>& in, const std::string& who) {
    const std::int64_t depth = a.integer("depth");
    if (depth < 0) throw shape_error(who + ": negative depth " + std::to_string(depth));
    runtime_extents out = in.at(0);
    out.push_back(std::size_t(depth));
    return out;
  }
  template <class Attrs>
  static void run_runtime(const Attrs&, const runtime_array& out, const std::vector<runtime_array>& in) {
    const std::size_t depth = out.extents.back(), n = element_count(in[0].extents);
    auto fill = [&](auto zero, auto label_type) {
      using T = decltype(zero);
      using L = decltype(label_type);
      T* o = out.as<T>();
      const L* labels = static_cast<const L*>(in[0].data);
      std::fill_n(o, n * depth, T(0));
      for (std::size_t i = 0; i < n; ++i)
        if (labels[i] >= 0 && std::size_t(labels[i]) < depth) o[i * depth + std::size_t(labels[i])] = T(1);
    };
    auto with_labels = [&](auto zero) {
      if (in[0].type == dtype::i32) fill(zero, std::int32_t{});
      else if (in[0].type == dtype::i64) fill(zero, std::int64_t{});
      else throw value_error("one_hot takes integer labels");
    };
    visit_compute_dtype(out.type, with_labels);
  }
  template <class Y, class TL, class L>
  static auto tangent(const Y&, const TL&, const L&) {
    return no_gradient{};
  }
  // Derivative rule (expr/derivative_rule.hpp): piecewise constant, so nothing flows back.
  static auto derivative(const auto&, const auto&, const auto&, const auto&) { return tuple_of(no_gradient{}); }
  template <class T, class Out, class Labels>
  static void run_cpu(const Out& out, const Labels& labels) {
    const std::size_t n = labels.size();
    std::fill_n(out.data(), n * Depth, T(0));
    for (std::size_t i = 0; i < n; ++i) {
      const auto label = labels.data()[i];
      if (label >= 0 && static_cast<std::size_t>(label) < Depth) out.data()[i * Depth + std::size_t(label)] = T(1);
    }
  }
};
}  // namespace ops

template <std::size_t Depth, class To = float, expression L>
auto one_hot(const L& labels, source_site where = source_site::current()) {
  static_assert(ops::one_hot_op<Depth, To>::template accepts<value_type_of<L>>, "symflow: one_hot takes integer labels");
  return make_kernel(ops::one_hot_op<Depth, To>{}, where, labels);
}
// With the depth as a rule's attribute value (expr/derivative_rule.hpp) and `like`'s dtype.
template <expression L, auto Depth, expression Like>
auto one_hot(const L& labels, fixed<Depth>, const Like&) {
  return one_hot<std::size_t(Depth), value_type_of<Like>>(labels, source_site{});
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_ONE_HOT_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, one_hot_op<1, float>)
#endif
