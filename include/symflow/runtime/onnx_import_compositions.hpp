#pragma once
// ONNX ops that are not one symflow op, read as compositions of ops on graph handles, as a user
// would write them (the ONNX operator specification, opsets 7 to 17). An ONNX op that one listed
// op reads is read in that op's file instead (expr/onnx_form.hpp); this table is for the rest.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnx_import_reader.hpp"

namespace symflow {
namespace onnx_compositions {

using reader = onnx_import_reader;

inline std::int64_t known_product(reader& r, const std::vector<std::int64_t>& e, std::size_t from, std::size_t to) {
  std::int64_t n = 1;
  for (std::size_t a = from; a < to; ++a) {
    if (e[a] < 0) return -1;
    n *= e[a];
  }
  return n;
}

// x as the matrix [prod(extents[:axis]), prod(extents[axis:])] (Flatten; Softmax before opset 13).
inline graph_handle as_matrix(reader& r, const graph_handle& x, std::int64_t axis) {
  const std::vector<std::int64_t> e = x.shape();
  const std::int64_t rows = known_product(r, e, 0, std::size_t(axis)), cols = known_product(r, e, std::size_t(axis), e.size());
  if (rows < 0 && cols < 0) r.refuse("both sides of the flattened axis have extents that are not known");
  return reshape(x, {rows, cols});
}

// The axes of an ONNX reduction, or none for noop_with_empty_axes (as read_onnx_reduction).
inline std::optional<std::vector<int>> reduction_axes(reader& r) {
  const std::size_t rank = r.rank_of(0);
  std::vector<std::int64_t> axes;
  if (r.has("axes")) axes = r.integers("axes", {});
  if (r.has_input(1)) axes = r.constant_integers(1);
  if (axes.empty() && r.integer("noop_with_empty_axes", 0) != 0) return std::nullopt;
  std::vector<int> out;
  for (std::int64_t a : axes) out.push_back(int(r.axis(a, rank)));
  return out;  // empty: every axis
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

// Y = alpha * A' B' + beta * C, A' = A or A^T (transA), B' likewise.
inline void gemm(reader& r) {
  graph_handle a = r.operand(0), b = r.operand(1);
  if (a.rank() != 2 || b.rank() != 2) r.refuse("Gemm's A and B must be matrices");
  if (r.integer("transA", 0)) a = transpose(a);
  if (r.integer("transB", 0)) b = transpose(b);
  const double alpha = r.number("alpha", 1.0), beta = r.number("beta", 1.0);
  graph_handle y = matmul(a, b);
  if (alpha != 1.0) y = y * r.handle(r.scalar(y.value_type(), alpha));
  if (r.has_input(2)) {
    graph_handle c = r.operand(2);
    if (beta != 1.0) c = c * r.handle(r.scalar(c.value_type(), beta));
    y = y + c;
  }
  r.result(y);
}

// Softmax, LogSoftmax: over `axis` from opset 13, before it over the flattened [:axis] x [axis:].
template <bool Log>
void softmax_family(reader& r) {
  const graph_handle x = r.operand(0);
  const auto apply = [](const graph_handle& v, int axis) { return Log ? log_softmax(v, axis) : softmax(v, axis); };
  if (r.opset() >= 13) return r.result(apply(x, int(r.axis(r.integer("axis", -1), x.rank()))));
  const std::int64_t axis = r.axis(r.integer("axis", 1), x.rank());
  std::vector<std::int64_t> e = x.shape();
  r.result(reshape(apply(as_matrix(r, x, axis), -1), e));
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

// Dropout at inference (training_mode absent or a constant false): the identity, mask all true.
inline void dropout(reader& r) {
  const graph_handle x = r.operand(0);
  r.number("ratio", 0.5), r.integer("seed", 0);
  if (r.has_input(2) && r.constant_numbers(2) != std::vector<double>{0})
    r.refuse("training_mode is not a constant false (only inference is read)");
  r.result(x);
  if (r.wants_output(1)) r.result(r.builder().apply(ops::expand_as_op::name, {r.builder().literal(1, dtype::boolean), x}), 1);
}

// BatchNormalization at inference: (x - mean) / sqrt(var + epsilon) * scale + bias over axis 1.
inline void batch_normalization(reader& r) {
  const graph_handle x = r.operand(0);
  if (r.integer("training_mode", 0) != 0) r.refuse("training_mode 1 (only inference is read)");
  r.number("momentum", 0.9), r.integer("spatial", 1);
  if (r.wants_output(1) || r.wants_output(2)) r.refuse("running mean and variance outputs (training) are not read");
  if (x.rank() < 2) r.refuse("an input of rank below 2");
  const auto channel = [&](std::size_t i) {  // [C] as [C, 1, ...], against x's axes after N
    const graph_handle p = r.operand(i);
    if (p.rank() != 1) r.refuse("scale, bias, mean and var must be vectors");
    std::vector<std::int64_t> per_channel(x.rank() - 1, 1);
    per_channel[0] = p.shape()[0];
    return reshape(p, per_channel);
  };
  const graph_handle eps = r.handle(r.scalar(x.value_type(), r.number("epsilon", 1e-5)));
  r.result((x - channel(3)) / sqrt(channel(4) + eps) * channel(1) + channel(2));
}

// LayerNormalization (opset 17): over the axes from `axis` on, scale and optional bias broadcast.
inline void layer_normalization(reader& r) {
  const graph_handle x = r.operand(0);
  if (r.integer("stash_type", 1) != 1) r.refuse("stash_type other than 1 (float)");
  const std::int64_t axis = r.axis(r.integer("axis", -1), x.rank());
  std::vector<int> axes;
  for (std::size_t a = std::size_t(axis); a < x.rank(); ++a) axes.push_back(int(a));
  const graph_handle mu = reduce_value(ops::mean_op{}, x, axes, true);
  const graph_handle centred = x - mu;
  const graph_handle var = reduce_value(ops::mean_op{}, centred * centred, axes, true);
  const graph_handle eps = r.handle(r.scalar(x.value_type(), r.number("epsilon", 1e-5)));
  const graph_handle inverse_deviation = rsqrt(var + eps);
  graph_handle y = centred * inverse_deviation * r.operand(1);
  if (r.has_input(2)) y = y + r.operand(2);
  r.result(y);
  if (r.wants_output(1)) r.result(mu, 1);
  if (r.wants_output(2)) r.result(inverse_deviation, 2);
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
  for (std::int64_t a = begin; a < end; ++a) {
    if (e[a] < 0) r.refuse("Shape of a value whose extent " + std::to_string(a) + " is not known");
    const unsigned char* p = reinterpret_cast<const unsigned char*>(&e[a]);
    t.bytes.insert(t.bytes.end(), p, p + sizeof(std::int64_t));
  }
  r.constant_result(std::move(t));
}
inline void size_of(reader& r) {
  const std::vector<std::int64_t> e = r.operand(0).shape();
  const std::int64_t n = known_product(r, e, 0, e.size());
  if (n < 0) r.refuse("Size of a value whose extents are not known");
  graph_tensor t{dtype::i64, {}, std::vector<unsigned char>(sizeof n)};
  std::memcpy(t.bytes.data(), &n, sizeof n);
  r.constant_result(std::move(t));
}

// Expand: x broadcast with a constant shape (both ways, as NumPy), through expand_as on a like
// tensor of bools.
inline void expand(reader& r) {
  const graph_handle x = r.operand(0);
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
  graph_tensor like{dtype::boolean, out, std::vector<unsigned char>(known_product(r, out, 0, out.size()), 1)};
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

using entry = std::pair<std::string_view, onnx_composition>;
// Sorted by ONNX op type.
inline constexpr entry table[] = {
    {"BatchNormalization", &batch_normalization},
    {"Constant", &constant},
    {"ConstantOfShape", &constant_of_shape},
    {"Dropout", &dropout},
    {"Expand", &expand},
    {"Flatten", &flatten},
    {"Gemm", &gemm},
    {"HardSigmoid", &hard_sigmoid},
    {"HardSwish", &hard_swish},
    {"Identity", &identity},
    {"LayerNormalization", &layer_normalization},
    {"LeakyRelu", &leaky_relu},
    {"LogSoftmax", &softmax_family<true>},
    {"Mean", &variadic_sum<true>},
    {"Reciprocal", &reciprocal},
    {"ReduceL1", &reduce_l1},
    {"ReduceL2", &reduce_l2},
    {"ReduceLogSum", &reduce_log_sum},
    {"ReduceLogSumExp", &reduce_log_sum_exp},
    {"ReduceSumSquare", &reduce_sum_square},
    {"Shape", &shape_of},
    {"Size", &size_of},
    {"Softmax", &softmax_family<false>},
    {"Split", &split},
    {"Squeeze", &squeeze},
    {"Sum", &variadic_sum<false>},
    {"ThresholdedRelu", &thresholded_relu},
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
