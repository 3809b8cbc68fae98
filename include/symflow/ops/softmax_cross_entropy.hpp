#ifndef SYMFLOW_OPS_SOFTMAX_CROSS_ENTROPY_HPP
#define SYMFLOW_OPS_SOFTMAX_CROSS_ENTROPY_HPP
// softmax_cross_entropy(logits [N,K], labels [N] integer) -> [N]: per-example loss
// logsumexp(logits[n]) - logits[n, label[n]], in one pass per row (shifted by the row maximum, so
// exp never overflows; accumulated in double). Its adjoint, (softmax(logits) - one_hot(labels)) * g,
// is a kernel too: one pass per row instead of the max/exp/sum/divide passes and the one_hot that the
// composed expression evaluates.
//
// A negative label marks a padding example (an ignore index): its loss and its gradient are 0 (as
// -sum(one_hot(labels) * log_softmax(logits)) gives, one_hot being a zero row there). A label of K or
// more is a mistake (labels of another data set, an off-by-one), not padding: value_error naming the
// example, the label and K, as PyTorch's cross_entropy refuses it.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../core/tensor.hpp"
#include "../expr/leaves.hpp"
#include "../expr/runtime_forms.hpp"
#include "../expr/derivative_rule.hpp"
#include "../expr/onnx_form.hpp"
#include "../expr/structural.hpp"
#include "conv2d_geometry.hpp"
#include "expand_as.hpp"
#include "expand_dims.hpp"
#include "mul.hpp"
#include "one_hot.hpp"
#include "softmax.hpp"
#include "sub.hpp"
#include "sum.hpp"
#include "law_example.hpp"

namespace symflow {
namespace ops {
namespace sce_detail {

template <class SL, class SY>
consteval bool static_shapes_fit() {
  if constexpr (SL::rank != 2 || SY::rank != 1) return false;
  else return conv_detail::compatible(SL::extents[0], SY::extents[0]) && SL::extents[1] != 0;
}
template <class SL, class SY>
consteval std::array<std::size_t, 1> static_result() {
  // Spelled out: nvcc's front end does not elide the braces of a returned std::array.
  if constexpr (SL::rank == 0 || SY::rank == 0) return std::array<std::size_t, 1>{dyn};
  else return std::array<std::size_t, 1>{SL::extents[0] != dyn ? SL::extents[0] : SY::extents[0]};
}

template <class Who, class L, class Y>
void check(const Who& who, std::string_view op, const L& logits, const Y& labels) {
  if (logits.size() != 2 || labels.size() != 1 || logits[0] != labels[0] || logits[1] == 0)
    throw shape_error(std::string(who) + ": " + std::string(op) + " takes logits [N,K] with K >= 1 and labels [N], not " +
                      format_extents(logits) + " and " + format_extents(labels));
}

// Row n's maximum and sum of exp(logit - maximum).
template <class T>
std::pair<double, double> row_stats(const T* row, std::size_t k) {
  const double m = double(*std::max_element(row, row + k));
  double s = 0;
  for (std::size_t j = 0; j < k; ++j) s += std::exp(double(row[j]) - m);
  return {m, s};
}

// Refuses a label of K or more before anything is written (negative labels are padding).
template <class Label>
void check_labels(std::string_view op, const Label* labels, std::size_t n, std::size_t k) {
  for (std::size_t i = 0; i < n; ++i)
    if (labels[i] >= 0 && std::uint64_t(labels[i]) >= k)
      throw value_error(std::string(op) + ": label " + std::to_string(labels[i]) + " of example " + std::to_string(i) +
                        " is not a class index in [0, " + std::to_string(k) +
                        ") (a negative label marks a padding example)");
}

// row(i) for every row i. Rows are independent, so threads may take shares of them (same bits):
// they do from a few thousand logits up, where the rows' exps in double (tens of nanoseconds per
// logit; a batch of 256 rows of 10 took 35-55 us on one thread) outweigh starting threads.
template <class Row>
void for_each_row(std::size_t n, std::size_t k, Row&& row) {
  [[maybe_unused]] const bool threads = n >= 2 && n * k >= 2048;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) if (threads)
#endif
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) row(std::size_t(i));
}

template <class T, class Label>
void forward(const T* logits, const Label* labels, T* loss, std::size_t n, std::size_t k) {
  check_labels("softmax_cross_entropy", labels, n, k);
  for_each_row(n, k, [&](std::size_t i) {
    const T* row = logits + i * k;
    const auto label = labels[i];
    if (label < 0) {
      loss[i] = T(0);
      return;
    }
    const auto [m, s] = row_stats(row, k);
    loss[i] = T(m + std::log(s) - double(row[std::size_t(label)]));
  });
}

template <class T, class Label>
void backward(const T* g, const T* logits, const Label* labels, T* out, std::size_t n, std::size_t k) {
  check_labels("softmax_cross_entropy_backward", labels, n, k);
  for_each_row(n, k, [&](std::size_t i) {
    const T* row = logits + i * k;
    T* d = out + i * k;
    const auto label = labels[i];
    if (label < 0) {
      std::fill_n(d, k, T(0));
      return;
    }
    const auto [m, s] = row_stats(row, k);
    const double scale = double(g[i]) / s;
    for (std::size_t j = 0; j < k; ++j) d[j] = T(std::exp(double(row[j]) - m) * scale);
    d[std::size_t(label)] -= g[i];
  });
}

// The labels' dtype rule (i32 or i64).
template <class Y>
inline constexpr bool label_dtype = std::is_integral_v<Y> && !std::is_same_v<Y, bool>;

template <class F>
void with_label_dtype(dtype t, std::string_view op, F&& f) {
  if (t == dtype::i32) f(std::int32_t{});
  else if (t == dtype::i64) f(std::int64_t{});
  else throw value_error(std::string(op) + ": labels must be i32 or i64, not " + std::string(dtype_name(t)));
}
}  // namespace sce_detail

// softmax_cross_entropy_backward(g [N], logits [N,K], labels [N]) -> [N,K]:
// g[n] * (softmax(logits[n]) - one_hot(labels[n])), zero rows for padding labels.
struct softmax_cross_entropy_backward_op {
  static constexpr std::string_view name = "softmax_cross_entropy_backward";
  static constexpr std::string_view doc =
      "softmax_cross_entropy_backward(g, logits, labels): the adjoint of softmax_cross_entropy for the "
      "adjoint g [N] of its result, [N, K] rows g[n] * (softmax(logits[n]) - one_hot(labels[n])): each "
      "row is computed in double (exp(logit - row max) * g[n] / sum), rounded to the logits' dtype, "
      "and g[n] is then subtracted at the label. Padding rows (negative label) are 0; a label of K or "
      "more is a value error. g has the logits' dtype (f32 or f64), the labels are i32 or i64. NaN and "
      "Inf in a row act as in the forward op (a +Inf logit gives a NaN row). Gradient: linear in g, "
      "and in the logits g[n] (diag(p) - p p^T) per row with p = softmax(logits[n]) (it needs a known "
      "class count K); none for the labels. Example: g = [1], logits [[0, 0]] and labels [0] give "
      "[[-0.5, 0.5]].";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn>>, law::floating<shape<dyn, 5>>, law::labels<shape<dyn>, -1, 5>>;
    template <class T>
    static auto of(const auto& g, const auto& logits, const auto& labels) { return softmax_cross_entropy_backward(g, logits, labels); }
  };
  static constexpr bool contiguous_operands = true;
  template <class G, class L, class Y>
  using result_type = G;
  template <class G, class L, class Y>  // dtype rule (ir/op_registry.hpp)
  static constexpr bool accepts = std::is_same_v<G, L> && std::is_floating_point_v<L> && sce_detail::label_dtype<Y>;
  template <class SG, class SL, class SY>
  static constexpr bool shapes_ok = [] {
    if constexpr (!sce_detail::static_shapes_fit<SL, SY>() || SG::rank != 1) return false;
    else return conv_detail::compatible(SG::extents[0], sce_detail::static_result<SL, SY>()[0]);
  }();
  template <class SG, class SL, class SY>
  using result_shape = SL;

  static extents_t<2> infer_extents(const auto& who, const extents_t<1>& g, const extents_t<2>& logits,
                                    const extents_t<1>& labels) {
    sce_detail::check(who, name, logits, labels);
    conv_detail::check_adjoint_extents(who, g, labels, "softmax_cross_entropy's result");
    return logits;
  }
  template <class T, class Out, class G, class L, class Y>
  static void run_cpu(const Out& out, const G& g, const L& logits, const Y& labels) {
    sce_detail::backward<T>(g.data(), logits.data(), labels.data(), out.data(), logits.extent(0), logits.extent(1));
  }
  // With p = softmax(logits), t = one_hot(labels), v = 1 for a label in range (else 0), this op is
  // g v (p - t): linear in g; in the logits its derivative is g v (diag(p) - p p^T) per row.
  // Derivative rule (expr/derivative_rule.hpp); it needs the class count K known.
  static auto derivative(const auto&, const auto& a, const auto&, const auto& g, const auto& logits, const auto& labels) {
    const auto p = softmax(logits);
    const auto t = one_hot(labels, known_extent(logits, fixed<1>{}), logits);
    const auto valid = sum(t, axes<-1>);
    const auto pa = p * a;
    return std::tuple{sum(a * (p - t), axes<-1>) * valid,
                      apply_view(expand_dims_op<2u>{}, g * valid) * (pa - p * sum(pa, axes<-1>, keepdims)), no_gradient{}};
  }
  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs&, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 3, who);
    sce_detail::check(who, name, in[1], in[2]);
    conv_detail::check_adjoint_extents(who, in[0], in[2], "softmax_cross_entropy's result");
    return in[1];
  }
  template <class Attrs>
  static void run_runtime(const Attrs&, const runtime_array& out, const std::vector<runtime_array>& in) {
    conv_detail::with_float_element(out.type, name, [&](auto t) {
      sce_detail::with_label_dtype(in[2].type, name, [&](auto label) {
        using T = decltype(t);
        sce_detail::backward<T>(static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data),
                                static_cast<const decltype(label)*>(in[2].data), out.as<T>(), in[1].extents[0],
                                in[1].extents[1]);
      });
    });
  }
};

struct softmax_cross_entropy_op {
  static constexpr std::string_view name = "softmax_cross_entropy";
  static constexpr std::string_view doc =
      "softmax_cross_entropy(logits, labels): the per-example loss of logits [N, K] (K >= 1, f32 or "
      "f64) against integer class labels [N] (i32 or i64), loss[n] = logsumexp(logits[n]) - logits[n, "
      "labels[n]], computed row by row in double after subtracting the row maximum (so exp never "
      "overflows), then rounded to the logits' dtype; mean of it is the usual classification loss. A "
      "negative label marks a padding example: its loss is 0 and its logits are not read. A label of K "
      "or more is a value error naming the example. A NaN in a row, or a +Inf logit (Inf - Inf), makes "
      "that loss NaN; a -Inf logit at the label (others finite) gives +Inf. Gradient: "
      "softmax_cross_entropy_backward(g, logits, labels) for the logits, none for the labels. Example: "
      "logits [[0, 0], [1, 2]] with labels [0, -1] give [0.6931472 (log 2), 0]. ONNX: "
      "SoftmaxCrossEntropyLoss, reduction none, ignore_index -1.";
  // The law tests' instance of this op (ops/law_example.hpp).
  struct law_example {
    using operands = std::tuple<law::floating<shape<dyn, 5>>, law::labels<shape<dyn>, -1, 5>>;
    template <class T>
    static auto of(const auto& logits, const auto& labels) { return softmax_cross_entropy(logits, labels); }
  };
  static constexpr bool contiguous_operands = true;
  template <class L, class Y>
  using result_type = L;
  template <class L, class Y>  // dtype rule (ir/op_registry.hpp): floating logits, integer labels
  static constexpr bool accepts = std::is_floating_point_v<L> && sce_detail::label_dtype<Y>;
  template <class SL, class SY>
  static constexpr bool shapes_ok = sce_detail::static_shapes_fit<SL, SY>();
  template <class SL, class SY>
  using result_shape = shape_from_array_t<sce_detail::static_result<SL, SY>()>;

  static extents_t<1> infer_extents(const auto& who, const extents_t<2>& logits, const extents_t<1>& labels) {
    sce_detail::check(who, name, logits, labels);
    return labels;
  }
  template <class T, class Out, class L, class Y>
  static void run_cpu(const Out& out, const L& logits, const Y& labels) {
    sce_detail::forward<T>(logits.data(), labels.data(), out.data(), logits.extent(0), logits.extent(1));
  }
  // ONNX SoftmaxCrossEntropyLoss with reduction "none" and ignore_index -1: label -1 is padding
  // there as here; ONNX defines no other negative label (this op pads them all). The importer reads
  // that node back as this op (runtime/onnx_import_layers.hpp).
  static void write_onnx(onnx_node_writer& w) {
    w.add("SoftmaxCrossEntropyLoss", {w.operand(0), w.operand(1)},
          {{"reduction", std::string("none")}, {"ignore_index", std::int64_t(-1)}}, true);
  }
  // Derivative rule (expr/derivative_rule.hpp): the backward op for the logits, none for labels.
  static auto derivative(const auto&, const auto& g, const auto&, const auto& logits, const auto& labels) {
    return tuple_of(apply_kernel(softmax_cross_entropy_backward_op{}, g, logits, labels), no_gradient{});
  }
  // d loss[n] = sum_k (softmax - one_hot)[n,k] * dlogits[n,k]
  template <class Y, class TL, class TY, class L, class Lab>
  static auto tangent(const Y& y, const TL& tl, const TY&, const L& logits, const Lab& labels) {
    if constexpr (is_no_gradient_v<TL>) return no_gradient{};
    else
      return sum(softmax_cross_entropy_backward(expand_as(one<value_type_of<Y>>{}, y), logits, labels) * tl, axes<-1>);
  }

  template <class Attrs>
  static runtime_extents runtime_extents_of(const Attrs&, const std::vector<runtime_extents>& in, const std::string& who) {
    conv_detail::expect_operands(in, 2, who);
    sce_detail::check(who, name, in[0], in[1]);
    return in[1];
  }
  template <class Attrs>
  static void run_runtime(const Attrs&, const runtime_array& out, const std::vector<runtime_array>& in) {
    conv_detail::with_float_element(out.type, name, [&](auto t) {
      sce_detail::with_label_dtype(in[1].type, name, [&](auto label) {
        using T = decltype(t);
        sce_detail::forward<T>(static_cast<const T*>(in[0].data), static_cast<const decltype(label)*>(in[1].data),
                               out.as<T>(), in[0].extents[0], in[0].extents[1]);
      });
    });
  }
};
}  // namespace ops

// Per-example softmax cross-entropy of logits [N,K] against integer labels [N]; mean(...) of it is
// the usual classification loss.
template <expression L, expression Y>
auto softmax_cross_entropy(const L& logits, const Y& labels, source_site where = source_site::current()) {
  static_assert(std::is_floating_point_v<value_type_of<L>>, "symflow: softmax_cross_entropy needs floating-point logits");
  static_assert(std::is_integral_v<value_type_of<Y>> && !std::is_same_v<value_type_of<Y>, bool>,
                "symflow: softmax_cross_entropy needs integer labels");
  return make_kernel(ops::softmax_cross_entropy_op{}, where, logits, labels);
}
template <expression G, expression L, expression Y>
auto softmax_cross_entropy_backward(const G& g, const L& logits, const Y& labels,
                                    source_site where = source_site::current()) {
  static_assert(std::is_same_v<value_type_of<G>, value_type_of<L>>,
                "symflow: softmax_cross_entropy_backward needs the adjoint in the logits' dtype");
  return make_kernel(ops::softmax_cross_entropy_backward_op{}, where, g, logits, labels);
}
}  // namespace symflow
#endif  // SYMFLOW_OPS_SOFTMAX_CROSS_ENTROPY_HPP

// The op list (list.hpp) reads this file a second time with SYMFLOW_LISTED defined.
#ifdef SYMFLOW_LISTED
SYMFLOW_LISTED(kernel, softmax_cross_entropy_op)
SYMFLOW_LISTED(kernel, softmax_cross_entropy_backward_op)
#endif
