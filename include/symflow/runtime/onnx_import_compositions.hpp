#pragma once
// ONNX ops that are not one symflow op, read as compositions of ops on graph handles, as a user
// would write them (the ONNX operator specification, opsets 1 to 17): shapes, constants and
// elementwise functions here, layers and losses in onnx_import_layers.hpp, and the one table of
// them all. An ONNX op that one listed op reads is read in that op's file instead
// (expr/onnx_form.hpp); this table is for the rest.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnx_import_layers.hpp"
#include "onnx_import_reader.hpp"

namespace symflow {
namespace onnx_compositions {

using reader = onnx_import_reader;

// The axes of an ONNX reduction, or none for noop_with_empty_axes (as read_onnx_reduction).
inline std::optional<std::vector<int>> reduction_axes(reader& r) {
  const std::optional<std::vector<std::int64_t>> axes = read_onnx_reduction_axes(r);
  if (!axes) return std::nullopt;
  return std::vector<int>(axes->begin(), axes->end());
}
inline bool keepdims(reader& r) { return r.integer("keepdims", 1) != 0; }

template <class F>
void reduce_composite(reader& r, F&& f) {
  const graph_handle x = r.operand(0);
  const bool keep = keepdims(r);
  const auto axes = reduction_axes(r);
  if (!axes) return r.result(x);
  r.result(f(x, *axes, keep));
}

inline void identity(reader& r) { r.result(r.operand(0)); }

inline void constant(reader& r) {
  const auto limit = r.limits().max_tensor_bytes;
  if (const auto* a = r.attribute_of("value", onnx::AttributeProto::TENSOR))
    return r.constant_result(from_onnx_tensor(a->t(), "Constant's value", limit));
  graph_tensor t;
  const auto put = [&](auto v, dtype type, std::vector<std::int64_t> extents, std::size_t n) {
    t.type = type;
    t.extents = std::move(extents);
    t.bytes.resize(n * sizeof(v));
  };
  if (const auto* a = r.attribute_of("value_float", onnx::AttributeProto::FLOAT)) {
    const float v = a->f();
    put(v, dtype::f32, {}, 1);
    std::memcpy(t.bytes.data(), &v, sizeof v);
  } else if (const auto* a = r.attribute_of("value_int", onnx::AttributeProto::INT)) {
    const std::int64_t v = a->i();
    put(v, dtype::i64, {}, 1);
    std::memcpy(t.bytes.data(), &v, sizeof v);
  } else if (const auto* a = r.attribute_of("value_floats", onnx::AttributeProto::FLOATS)) {
    put(float(0), dtype::f32, {a->floats_size()}, std::size_t(a->floats_size()));
    if (a->floats_size()) std::memcpy(t.bytes.data(), a->floats().data(), t.bytes.size());
  } else if (const auto* a = r.attribute_of("value_ints", onnx::AttributeProto::INTS)) {
    put(std::int64_t(0), dtype::i64, {a->ints_size()}, std::size_t(a->ints_size()));
    if (a->ints_size()) std::memcpy(t.bytes.data(), a->ints().data(), t.bytes.size());
  } else {
    r.refuse("a Constant with no value symflow reads (value, value_float(s) or value_int(s))");
  }
  r.constant_result(std::move(t));
}

inline void reciprocal(reader& r) {
  const graph_handle x = r.operand(0);
  r.result(r.handle(r.scalar(x.value_type(), 1.0)) / x);
}

inline void flatten(reader& r) {
  const graph_handle x = r.operand(0);
  std::int64_t axis = r.integer("axis", 1);
  if (axis != std::int64_t(x.rank())) axis = r.axis(axis, x.rank());
  r.result(as_matrix(r, x, axis));
}

// Squeeze: the listed axes of extent 1 (all of them when none are listed) removed, as a reshape.
inline void squeeze(reader& r) {
  const graph_handle x = r.operand(0);
  const std::vector<std::int64_t> e = x.shape();
  std::vector<std::int64_t> axes = r.has_input(1) ? r.constant_integers(1) : r.integers("axes", {});
  axes = r.axes(axes, e.size());
  std::vector<bool> drop(e.size(), axes.empty());
  if (axes.empty())
    for (std::size_t a = 0; a < e.size(); ++a) drop[a] = e[a] == 1;
  for (std::int64_t a : axes) {
    if (e[a] != 1) r.refuse("axis " + std::to_string(a) + " has extent " + std::to_string(e[a]) + ", not 1");
    drop[a] = true;
  }
  std::vector<std::int64_t> target;
  for (std::size_t a = 0; a < e.size(); ++a)
    if (!drop[a]) target.push_back(e[a]);
  if (std::count(target.begin(), target.end(), unknown_extent) > 1) r.refuse("more than one unknown extent remains");
  r.result(reshape(x, target));
}

inline void leaky_relu(reader& r) {
  const graph_handle x = r.operand(0);
  const double alpha = r.number("alpha", 0.01);
  r.result(where(x < 0.0, x * r.handle(r.scalar(x.value_type(), alpha)), x));
}

inline graph_handle hard_sigmoid_of(reader& r, const graph_handle& x, double alpha, double beta) {
  const dtype t = x.value_type();
  const graph_handle z = x * r.handle(r.scalar(t, alpha)) + r.handle(r.scalar(t, beta));
  return clip(z, r.handle(r.scalar(t, 0.0)), r.handle(r.scalar(t, 1.0)));
}
inline void hard_sigmoid(reader& r) {
  const graph_handle x = r.operand(0);
  r.result(hard_sigmoid_of(r, x, r.number("alpha", 0.2), r.number("beta", 0.5)));
}
inline void hard_swish(reader& r) {
  const graph_handle x = r.operand(0);
  r.result(x * hard_sigmoid_of(r, x, 1.0 / 6.0, 0.5));
}
inline void thresholded_relu(reader& r) {
  const graph_handle x = r.operand(0);
  const dtype t = x.value_type();
  r.result(where(x > r.handle(r.scalar(t, r.number("alpha", 1.0))), x, r.handle(r.scalar(t, 0.0))));
}

// Sum and Mean of any number of operands (broadcasting).
template <bool Average>
void variadic_sum(reader& r) {
  graph_handle y = r.operand(0);
  for (std::size_t i = 1; i < r.input_count(); ++i) y = y + r.operand(i);
  if (Average) y = y / r.handle(r.scalar(y.value_type(), double(r.input_count())));
  r.result(y);
}

inline void reduce_sum_square(reader& r) {
  reduce_composite(r, [](const graph_handle& x, const std::vector<int>& a, bool k) { return reduce_value(ops::sum_op{}, x * x, a, k); });
}
inline void reduce_l1(reader& r) {
  reduce_composite(r, [](const graph_handle& x, const std::vector<int>& a, bool k) { return reduce_value(ops::sum_op{}, abs(x), a, k); });
}
inline void reduce_l2(reader& r) {
  reduce_composite(r, [](const graph_handle& x, const std::vector<int>& a, bool k) { return sqrt(reduce_value(ops::sum_op{}, x * x, a, k)); });
}
inline void reduce_log_sum(reader& r) {
  reduce_composite(r, [](const graph_handle& x, const std::vector<int>& a, bool k) { return log(reduce_value(ops::sum_op{}, x, a, k)); });
}
inline void reduce_log_sum_exp(reader& r) {
  reduce_composite(r, [&](const graph_handle& x, const std::vector<int>& a, bool k) {
    const graph_handle m = reduce_value(ops::max_op{}, x, a, true);
    // Shifted by the maximum where it is finite (an all -Inf row would give -Inf - -Inf = NaN).
    const dtype t = x.value_type();
    const graph_handle shift = where(abs(m) < r.handle(r.scalar(t, INFINITY)), m, r.handle(r.scalar(t, 0.0)));
    const graph_handle s = log(reduce_value(ops::sum_op{}, exp(x - shift), a, true)) + shift;
    return k ? s : reduce_value(ops::sum_op{}, s, a, false);
  });
}

// Shape and Size of a value whose extents are known: i64 constants.
inline void shape_of(reader& r) {
  const std::vector<std::int64_t> e = r.operand(0).shape();
  const std::int64_t rank = std::int64_t(e.size());
  const auto clamp = [&](std::int64_t i) { return std::clamp<std::int64_t>(i < 0 ? i + rank : i, 0, rank); };
  const std::int64_t begin = clamp(r.integer("start", 0)), end = clamp(r.integer("end", rank));
  graph_tensor t{dtype::i64, {std::max<std::int64_t>(end - begin, 0)}, {}};
  const bool whole = begin == 0 && end == rank;
  for (std::int64_t a = begin; a < end; ++a) {
    // Unknown extents: the whole shape stands for its value, for Expand to read (expand_as).
    if (e[a] < 0 && whole) return r.shape_result(r.operand(0));
    if (e[a] < 0) r.refuse("Shape of a value whose extent " + std::to_string(a) + " is not known");
    const unsigned char* p = reinterpret_cast<const unsigned char*>(&e[a]);
    t.bytes.insert(t.bytes.end(), p, p + sizeof(std::int64_t));
  }
  r.constant_result(std::move(t));
}
inline void size_of(reader& r) {
  const std::vector<std::int64_t> e = r.operand(0).shape();
  const std::int64_t n = known_product(e, 0, e.size());
  if (n < 0) r.refuse("Size of a value whose extents are not known");
  graph_tensor t{dtype::i64, {}, std::vector<unsigned char>(sizeof n)};
  std::memcpy(t.bytes.data(), &n, sizeof n);
  r.constant_result(std::move(t));
}

// Expand: x broadcast with a constant shape (both ways, as NumPy), through expand_as on a like
// tensor of bools; with the Shape of a value whose extents are not all known, expand_as on it.
inline void expand(reader& r) {
  const graph_handle x = r.operand(0);
  if (const auto like = r.shape_source(1)) return r.result(r.builder().apply(ops::expand_as_op::name, {x, *like}));
  const std::vector<std::int64_t> to = r.constant_integers(1), e = x.shape();
  const std::size_t rank = std::max(to.size(), e.size());
  std::vector<std::int64_t> out(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    const std::int64_t a = k < rank - e.size() ? 1 : e[k - (rank - e.size())];
    const std::int64_t b = k < rank - to.size() ? 1 : to[k - (rank - to.size())];
    if (a < 0 || b < 0) r.refuse("Expand over extents that are not known");
    if (a != b && a != 1 && b != 1) r.refuse("cannot broadcast the input to the shape");
    out[k] = std::max(a, b) == 0 ? 0 : std::max(a, b);
  }
  if (out == e) return r.result(x);
  graph_tensor like{dtype::boolean, out, std::vector<unsigned char>(known_product(out, 0, out.size()), 1)};
  if (like.bytes.size() > r.limits().max_tensor_bytes) r.refuse("the expanded shape is too large");
  r.result(r.builder().apply(ops::expand_as_op::name, {x, r.builder().constant(std::move(like))}));
}

// Split into outputs along axis: sizes from the split input (attribute before opset 13), else
// equal parts.
inline void split(reader& r) {
  const graph_handle x = r.operand(0);
  const std::int64_t axis = r.axis(r.integer("axis", 0), x.rank()), d = x.shape()[std::size_t(axis)];
  if (d < 0) r.refuse("Split of an axis whose extent is not known");
  std::vector<std::int64_t> sizes = r.has_input(1) ? r.constant_integers(1) : r.integers("split", {});
  const std::size_t n = r.output_count();
  if (n == 0) r.refuse("Split with no outputs");
  if (sizes.empty()) {
    const std::int64_t part = (d + std::int64_t(n) - 1) / std::int64_t(n);
    for (std::size_t k = 0; k < n; ++k) sizes.push_back(std::clamp<std::int64_t>(d - part * std::int64_t(k), 0, part));
  }
  if (sizes.size() != n) r.refuse("split has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(n) + " outputs");
  std::int64_t begin = 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (sizes[k] < 0 || begin + sizes[k] > d) r.refuse("the split sizes do not fit the axis");
    r.result(slice(x, axis, begin, begin + sizes[k]), k);
    begin += sizes[k];
  }
  if (begin != d) r.refuse("the split sizes add up to " + std::to_string(begin) + ", not " + std::to_string(d));
}

// ConstantOfShape: a constant of the given shape filled with value (a one-element tensor, default
// f32 0).
inline void constant_of_shape(reader& r) {
  const std::vector<std::int64_t> to = r.constant_integers(0);
  graph_tensor fill{dtype::f32, {1}, std::vector<unsigned char>(4, 0)};
  if (const auto* a = r.attribute_of("value", onnx::AttributeProto::TENSOR)) fill = from_onnx_tensor(a->t(), "value", 64);
  if (fill.element_count() != 1) r.refuse("value is not one element");
  const std::size_t size = dtype_size(fill.type);
  std::size_t n = 1;
  for (std::int64_t e : to) {
    if (e < 0) r.refuse("a negative extent");
    if (e && n > r.limits().max_tensor_bytes / size / std::size_t(e)) r.refuse("the shape is too large");
    n *= std::size_t(e);
  }
  graph_tensor t{fill.type, to, {}};
  t.bytes.reserve(n * size);
  for (std::size_t k = 0; k < n; ++k) t.bytes.insert(t.bytes.end(), fill.bytes.begin(), fill.bytes.end());
  r.constant_result(std::move(t));
}

inline void logical_xor(reader& r) {
  const graph_handle a = r.operand(0), b = r.operand(1);
  r.result(logical_and(logical_or(a, b), logical_not(logical_and(a, b))));
}


inline void cast_like(reader& r) { r.result(cast(r.operand(0), r.operand(1).value_type())); }
inline void is_nan(reader& r) {
  const graph_handle x = r.operand(0);
  r.result(not_equal(x, x));
}
inline void is_inf(reader& r) {
  const graph_handle x = r.operand(0);
  const dtype t = x.value_type();
  if (!is_floating_dtype(t)) r.refuse("IsInf of " + std::string(dtype_name(t)) + " (ONNX's IsInf takes floats)");
  const bool positive = r.integer("detect_positive", 1) != 0, negative = r.integer("detect_negative", 1) != 0;
  const graph_handle up = equal(x, r.handle(r.scalar(t, INFINITY))), down = equal(x, r.handle(r.scalar(t, -INFINITY)));
  if (positive && negative) return r.result(logical_or(up, down));
  if (positive) return r.result(up);
  if (negative) return r.result(down);
  r.result(logical_and(up, down));  // neither: all false
}
// Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
inline void celu(reader& r) {
  const graph_handle x = r.operand(0);
  const dtype t = x.value_type();
  const double alpha = r.number("alpha", 1.0);
  const graph_handle zero = r.handle(r.scalar(t, 0.0)), a = r.handle(r.scalar(t, alpha));
  r.result(maximum(zero, x) + minimum(zero, a * (exp(x / a) - r.handle(r.scalar(t, 1.0)))));
}
// Tile: the operand repeated along each axis (a concat of copies), repeats a constant.
inline void tile(reader& r) {
  graph_handle y = r.operand(0);
  const std::vector<std::int64_t> repeats = r.constant_integers(1);
  if (repeats.size() != y.rank()) r.refuse("repeats has " + std::to_string(repeats.size()) + " values for rank " + std::to_string(y.rank()));
  for (std::size_t a = 0; a < repeats.size(); ++a) {
    if (repeats[a] < 1 || repeats[a] > 4096) r.refuse("a repeat count outside 1 to 4096");
    if (repeats[a] > 1) y = concat(std::vector<graph_handle>(std::size_t(repeats[a]), y), std::int64_t(a));
  }
  r.result(y);
}
// Range of constant operands: a constant.
inline void range(reader& r) {
  const std::vector<double> start = r.constant_numbers(0), limit = r.constant_numbers(1), delta = r.constant_numbers(2);
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1) r.refuse("start, limit and delta must be scalars");
  if (delta[0] == 0 || !std::isfinite(delta[0]) || !std::isfinite(start[0]) || !std::isfinite(limit[0])) r.refuse("a zero or non-finite operand");
  const double count = std::max(std::ceil((limit[0] - start[0]) / delta[0]), 0.0);
  if (count > double(onnx_value_table::fold_limit)) r.refuse("more than 2^16 elements");
  const dtype t = r.dtype_of(r.input(0));
  graph_tensor out{t, {std::int64_t(count)}, std::vector<unsigned char>(std::size_t(count) * dtype_size(t))};
  visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      for (std::size_t i = 0; i < std::size_t(count); ++i) {
        const T v = T(T(start[0]) + T(i) * T(delta[0]));
        std::memcpy(out.bytes.data() + i * sizeof(T), &v, sizeof(T));
      }
    } else {
      r.refuse("Range of " + std::string(dtype_name(t)));
    }
  });
  r.constant_result(std::move(out));
}

// OneHot(indices, depth, values [off, on], axis): indices as int64 (floats truncated, as ONNX casts
// them), a negative one counted from the end, one outside [-depth, depth) a row of `off`. As
// one_hot of the indices made non-negative (a where between off and on unless they are [0, 1], so
// that both are exact), the new axis moved to `axis`.
inline void one_hot_of(reader& r) {
  const graph_handle indices = r.operand(0);
  if (indices.value_type() == dtype::boolean) r.refuse("OneHot of bool indices");
  const std::vector<double> depth = r.constant_numbers(1);
  if (depth.size() != 1 || !(depth[0] >= 1 && depth[0] <= double(std::int64_t(1) << 31)))
    r.refuse("OneHot's depth must be one number in [1, 2^31]");
  const std::int64_t d = std::int64_t(depth[0]);
  const std::vector<double> values = r.constant_numbers(2);
  if (values.size() != 2) r.refuse("OneHot's values must be [off, on]");
  const dtype t = r.dtype_of(r.input(2));
  const std::int64_t axis = r.axis(r.integer("axis", -1), indices.rank() + 1);
  graph_builder& b = r.builder();
  const graph_handle wide = cast(indices, dtype::i64);
  const graph_handle index = where(wide < b.literal(0, dtype::i64), wide + b.literal(double(d), dtype::i64), wide);
  graph_handle y = values[0] == 0 && values[1] == 1
                       ? one_hot(index, d, t)
                       : where(one_hot(index, d, dtype::boolean), b.literal(values[1], t), b.literal(values[0], t));
  if (axis != std::int64_t(indices.rank())) {
    std::vector<std::int64_t> perm;
    for (std::int64_t a = 0; a < std::int64_t(indices.rank()); ++a) {
      if (a == axis) perm.push_back(std::int64_t(indices.rank()));
      perm.push_back(a);
    }
    y = transpose(y, perm);
  }
  r.result(y);
}

using entry = std::pair<std::string_view, onnx_composition>;
// Sorted by ONNX op type.
inline constexpr entry table[] = {
    {"BatchNormalization", &batch_normalization},
    {"CastLike", &cast_like},
    {"Celu", &celu},
    {"Constant", &constant},
    {"ConstantOfShape", &constant_of_shape},
    {"Dropout", &dropout},
    {"Expand", &expand},
    {"Flatten", &flatten},
    {"Gemm", &gemm},
    {"HardSigmoid", &hard_sigmoid},
    {"Hardmax", &hardmax},
    {"HardSwish", &hard_swish},
    {"Identity", &identity},
    {"IsInf", &is_inf},
    {"IsNaN", &is_nan},
    {"LayerNormalization", &layer_normalization},
    {"LeakyRelu", &leaky_relu},
    {"LogSoftmax", &softmax_family<true>},
    {"Mean", &variadic_sum<true>},
    {"NegativeLogLikelihoodLoss", &negative_log_likelihood_loss},
    {"OneHot", &one_hot_of},
    {"Range", &range},
    {"Reciprocal", &reciprocal},
    {"ReduceL1", &reduce_l1},
    {"ReduceL2", &reduce_l2},
    {"ReduceLogSum", &reduce_log_sum},
    {"ReduceLogSumExp", &reduce_log_sum_exp},
    {"ReduceSumSquare", &reduce_sum_square},
    {"Shape", &shape_of},
    {"Size", &size_of},
    {"Softmax", &softmax_family<false>},
    {"SoftmaxCrossEntropyLoss", &softmax_cross_entropy_loss},
    {"Split", &split},
    {"Squeeze", &squeeze},
    {"Sum", &variadic_sum<false>},
    {"ThresholdedRelu", &thresholded_relu},
    {"Tile", &tile},
    {"Xor", &logical_xor},
};

}  // namespace onnx_compositions

inline onnx_composition find_onnx_composition(std::string_view type) {
  for (const auto& [name, read] : onnx_compositions::table)
    if (name == type) return read;
  return nullptr;
}

// The ONNX op types the importer reads, sorted: the listed ops' and the compositions'.
inline std::vector<std::string_view> onnx_types_imported() {
  std::vector<std::string_view> types = onnx_types_read_by_ops();
  for (const auto& [name, read] : onnx_compositions::table) types.push_back(name);
  std::sort(types.begin(), types.end());
  return types;
}

}  // namespace symflow
