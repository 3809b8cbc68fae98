#ifndef SYMFLOW_OPS_TRILU_HPP
#define SYMFLOW_OPS_TRILU_HPP
// tril / triu: the lower or upper triangle of the last two axes, the rest zero (ONNX Trilu,
// numpy.tril/triu, torch.tril/triu). Attention's causal mask with lengths known only at run time is
// tril of an all-true mask shaped like the scores (ops/attention.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../expr/derivative_rule.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/structural.hpp"
#include "law_example.hpp"
#include "../expr/onnx_form.hpp"

namespace symflow {
namespace ops {

namespace trilu_detail {
inline constexpr std::size_t cols_limit = std::size_t(1) << 62;
// x seen as [outer, rows, cols] with elements of `size` bytes: element (i, j) kept where j - i <= k
// (lower) or j - i >= k (upper), else all bits zero (+0, 0, false).
inline void run(const void* x, void* out, const runtime_extents& e, bool upper, std::int64_t k, std::size_t size) {
  const std::size_t r = e.size(), rows = e[r - 2], cols = e[r - 1];
  std::size_t outer = 1;
  for (std::size_t i = 0; i + 2 < r; ++i) outer *= e[i];
  const char* from = static_cast<const char*>(x);
  char* to = static_cast<char*>(out);
  if (cols == 0) return;  // no elements, and no storage to point at
  // Past the matrix on either side every k means the same; clamped, i + k cannot overflow.
  k = std::clamp<std::int64_t>(k, -std::int64_t(std::min<std::size_t>(rows, cols_limit)) - 1,
                               std::int64_t(std::min<std::size_t>(cols, cols_limit)) + 1);
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < rows; ++i) {
      const std::size_t at = (o * rows + i) * cols * size;
      // Columns kept in row i: [0, i + k] (lower) or [i + k, cols) (upper), clipped to the row.
      const std::int64_t edge = std::int64_t(i) + k;
      const std::size_t split = edge < 0 ? 0 : std::min<std::size_t>(std::size_t(edge) + (upper ? 0 : 1), cols);
      const std::size_t kept_begin = upper ? split : 0, kept_end = upper ? cols : split;
      std::memset(to + at, 0, cols * size);
      if (kept_end > kept_begin)
        std::memcpy(to + at + kept_begin * size, from + at + kept_begin * size, (kept_end - kept_begin) * size);
    }
}
}  // namespace trilu_detail

template <bool Upper>
struct trilu_op {
  static constexpr std::string_view name = "trilu";
  // ONNX Trilu, k as an input.
  static void write_onnx(onnx_node_writer& w) {
    w.add("Trilu", {w.operand(0), w.scalar(dtype::i64, double(w.integer("k")))},
          {{"upper", std::int64_t(w.boolean("upper"))}}, true);
  }
  static constexpr std::array<std::string_view, 1> onnx_reads{"Trilu"};
  static void read_onnx(onnx_node_reader& r) {
    std::int64_t k = 0;
    if (r.has_input(1)) {
      const std::vector<std::int64_t> given = r.constant_integers(1);
      if (given.size() != 1) r.refuse("Trilu's k is not one value");
      k = given[0];
    }
    r.result(r.apply(name, {r.input(0)}, {{"upper", r.integer("upper", 1) != 0}, {"k", k}}));
  }
  static constexpr std::string_view doc =
      "trilu(x), attributes upper and k (ONNX Trilu; in C++ tril(x, k = 0) and triu(x, k = 0), as "
      "numpy and torch): x of rank >= 2 with the elements of its last two axes outside a triangle set "
      "to zero (+0, 0 or false): lower (upper false) keeps x[..., i, j] where j - i <= k, upper where "
      "j - i >= k; k may be negative (below the diagonal) or beyond the matrix. x's shape and dtype "
      "(any dtype); kept values keep their bits, so NaN and Inf outside the triangle become 0. "
      "Gradient: the same triangle of g. Example: tril of [[1, 2, 3], [4, 5, 6]] is [[1, 0, 0], [4, "
      "5, 0]]; triu with k = 1, [[0, 2, 3], [0, 0, 6]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 4, 6>>>;
    template <class T>
    static auto of(const auto& x0) { return tril(x0, -1) + triu(x0, 2); }
  };
  std::int64_t k = 0;
  bool operator==(const trilu_op&) const = default;
  // Attributes for the graph value (graph/): k travels as an integer attribute; the size_t it is
  // reported as converts back to the same signed value (C++20 integral conversions are modular).
  template <class V>
  void visit_attributes(V&& v) const {
    v("upper", Upper);
    v("k", std::size_t(k));
  }
  static constexpr bool contiguous_operands = true;
  template <class X>
  using result_type = X;
  template <class X>
  static constexpr bool accepts = true;  // dtype rule (ir/op_registry.hpp): any dtype
  template <class S>
  static constexpr bool shapes_ok = S::rank >= 2;
  template <class S>
  using result_shape = S;

  template <std::size_t R>
  extents_t<R> infer_extents(const auto&, const extents_t<R>& in) const {
    return in;
  }
  template <class T, class Out, class X>
  void run_cpu(const Out& out, const X& x) const {
    trilu_detail::run(x.data(), out.data(), runtime_extents(x.extents().begin(), x.extents().end()), Upper, k, sizeof(T));
  }
  // Runtime form (graph interpreter and builder): the attributes are values.
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs&, const std::vector<runtime_extents>& in, const std::string& who) {
    if (in.at(0).size() < 2)
      throw shape_error(who + ": trilu needs an operand of rank 2 or more, not " + format_extents(in[0]));
    return in[0];
  }
  template <class Attrs>
  static void run_runtime(const Attrs& a, const runtime_array& out, const std::vector<runtime_array>& in) {
    trilu_detail::run(in[0].data, out.data, in[0].extents, a.boolean("upper"), a.integer("k"), dtype_size(out.type));
  }
  static constexpr bool prints_attributes = true;  // printouts show upper and k (expr/to_string.hpp)
  // The attributes held as members, for an op of the same family (expr/derivative_rule.hpp).
  constexpr auto members() const { return std::tuple{k}; }
  // Linear: the tangent is the same triangle of the operand's tangent.
  template <class Y, class TX, class X>
  auto tangent(const Y&, const TX& tx, const X&) const {
    if constexpr (is_no_gradient_v<TX>) return no_gradient{};
    else return make_kernel(*this, source_site{}, tx);
  }
  // Derivative rule (expr/derivative_rule.hpp): a mask, its own adjoint.
  static auto derivative(const auto& self, const auto& g, const auto&, const auto&) {
    return tuple_of(apply_kernel(self, g));
  }
};
}  // namespace ops

// The lower triangle of the last two axes: x[..., i, j] where j - i <= k, zero elsewhere.
template <expression X>
auto tril(const X& x, std::int64_t k = 0, source_site where = source_site::current()) {
  static_assert(shape_of<X>::rank >= 2, "symflow: tril: the operand needs rank 2 or more");
  return make_kernel(ops::trilu_op<false>{k}, where, x);
}
// The upper triangle of the last two axes: x[..., i, j] where j - i >= k, zero elsewhere.
template <expression X>
auto triu(const X& x, std::int64_t k = 0, source_site where = source_site::current()) {
  static_assert(shape_of<X>::rank >= 2, "symflow: triu: the operand needs rank 2 or more");
  return make_kernel(ops::trilu_op<true>{k}, where, x);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_TRILU_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, trilu_op<false>)
#endif
