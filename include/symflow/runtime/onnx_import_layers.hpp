#pragma once
// The ONNX importer's compositions (onnx_import_compositions.hpp) for layers and losses: Gemm, the
// softmax family, Hardmax, Dropout, BatchNormalization and LayerNormalization at inference, and the
// NegativeLogLikelihood and SoftmaxCrossEntropy losses, as the ONNX operator specification
// defines them, built from ops on graph handles.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnx_import_reader.hpp"

namespace symflow {
namespace onnx_compositions {

using reader = onnx_import_reader;

inline std::int64_t known_product(const std::vector<std::int64_t>& e, std::size_t from, std::size_t to) {
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
  const std::int64_t rows = known_product(e, 0, std::size_t(axis)), cols = known_product(e, std::size_t(axis), e.size());
  if (rows < 0 && cols < 0) r.refuse("both sides of the flattened axis have extents that are not known");
  return reshape(x, {rows, cols});
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

// NegativeLogLikelihoodLoss over log-probabilities x [N, C, d...] and targets [N, d...]; with
// SoftmaxCrossEntropyLoss, x = log_softmax(scores) over axis 1. Weights per class and
// ignore_index weigh the picked terms; "mean" divides by the sum of the weights used.
inline graph_handle negative_log_likelihood(reader& r, const graph_handle& x, const graph_handle& t, std::size_t weight_input) {
  if (x.rank() < 2 || t.rank() + 1 != x.rank()) r.refuse("the input must be [N, C, ...] and the target [N, ...]");
  const std::string reduction = r.text("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none") r.refuse("reduction '" + reduction + "'");
  graph_builder& b = r.builder();
  const dtype type = x.value_type(), index_type = t.value_type();
  const bool ignoring = r.has("ignore_index");
  const std::int64_t ignore = r.integer("ignore_index", 0);
  graph_handle index = t;
  std::optional<graph_handle> kept;  // where the target is not ignore_index
  if (ignoring) {
    kept = not_equal(t, r.handle(r.scalar(index_type, double(ignore))));
    index = where(*kept, t, b.literal(0, index_type));
  }
  const graph_handle picked_kept = gather_elements(x, b.apply(ops::expand_dims_op<1u>::name, {index}, {{"axes", std::vector<std::int64_t>{1}}}), 1);
  const graph_handle picked = reshape(picked_kept, t.shape());
  std::optional<graph_handle> weight;
  if (r.has_input(weight_input)) weight = gather(r.operand(weight_input), index, 0);
  if (kept) weight = where(*kept, weight ? *weight : b.apply(ops::expand_as_op::name, {b.literal(1, type), picked}), b.literal(0, type));
  graph_handle loss = -picked;
  if (weight) loss = loss * *weight;
  if (reduction == "none") return loss;
  const graph_handle total = reduce_value(ops::sum_op{}, loss, {}, false);
  if (reduction == "sum") return total;
  if (!weight) return reduce_value(ops::mean_op{}, loss, {}, false);
  return total / reduce_value(ops::sum_op{}, *weight, {}, false);
}
inline void negative_log_likelihood_loss(reader& r) {
  r.result(negative_log_likelihood(r, r.operand(0), r.operand(1), 2));
}
// Scores [N, C] without weights, whose ignore_index (if any) is negative, read as symflow's
// softmax_cross_entropy op, which treats every negative label as padding (ONNX defines no other
// negative label) and is what that op's ONNX form writes: a round trip gives the op back.
inline bool reads_as_the_fused_op(reader& r) {
  if (r.has_input(2) || r.wants_output(1) || r.rank_of(0) != 2 || r.rank_of(1) != 1) return false;
  const std::string reduction = r.text("reduction", "mean");
  if (r.has("ignore_index") && (reduction != "none" || r.integer("ignore_index", 0) >= 0)) return false;
  return reduction == "none" || reduction == "mean" || reduction == "sum";
}
inline void softmax_cross_entropy_loss(reader& r) {
  if (reads_as_the_fused_op(r)) {
    const graph_handle loss = r.builder().apply(ops::softmax_cross_entropy_op::name, {r.operand(0), r.operand(1)});
    const std::string reduction = r.text("reduction", "mean");
    if (reduction == "none") return r.result(loss);
    if (reduction == "sum") return r.result(reduce_value(ops::sum_op{}, loss, {}, false));
    return r.result(reduce_value(ops::mean_op{}, loss, {}, false));
  }
  const graph_handle log_prob = log_softmax(r.operand(0), 1);
  r.result(negative_log_likelihood(r, log_prob, r.operand(1), 2));
  if (r.wants_output(1)) r.result(log_prob, 1);
}

// Hardmax: 1 at the first maximum along axis (from opset 13; before it, of rank-2 operands only),
// a one_hot of the argmax, with the axis moved last and back.
inline void hardmax(reader& r) {
  const graph_handle x = r.operand(0);
  const std::int64_t axis = r.axis(r.integer("axis", r.opset() >= 13 ? -1 : 1), x.rank());
  if (r.opset() < 13 && x.rank() != 2) r.refuse("Hardmax before opset 13 of an operand of rank other than 2");
  const std::int64_t depth = x.shape()[std::size_t(axis)];
  if (depth < 0) r.refuse("Hardmax over an axis whose extent is not known");
  std::vector<std::int64_t> perm;
  for (std::size_t a = 0; a < x.rank(); ++a) perm.push_back(std::int64_t(a));
  std::swap(perm[std::size_t(axis)], perm.back());
  const bool moved = axis != std::int64_t(x.rank()) - 1;
  const graph_handle last = moved ? transpose(x, perm) : x;
  const graph_handle y = one_hot(argmax(last, std::int64_t(x.rank()) - 1), depth, x.value_type());
  r.result(moved ? transpose(y, perm) : y);
}
}  // namespace onnx_compositions
}  // namespace symflow
