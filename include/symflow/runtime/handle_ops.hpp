#pragma once
// The graph-handle forms of the ops whose attributes are template arguments on expression types and
// values here: cast(h, dtype), transpose(h, perm), reshape, slice, flip, concat, gather, argmax, cumsum,
// pad, one_hot, the softmax family with a run-time axis, and the control-flow ops (scan, cond,
// while_loop), whose sub-graphs are graph values. Included at the end of builder.hpp,
// which they need complete.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "builder.hpp"

namespace symflow {

// Ops whose attributes are values here and template arguments on expression types (an inline
// namespace: found by argument-dependent lookup on graph_handle, or named explicitly).
inline namespace graph_ops {
namespace handle_detail {
// A negative axis counted from the last; out-of-range axes are left for the op's shape rule to refuse.
inline std::int64_t from_first(std::int64_t axis, std::size_t rank) {
  return axis < 0 && axis >= -std::int64_t(rank) ? axis + std::int64_t(rank) : axis;
}
inline std::vector<std::int64_t> all_axes(std::size_t rank) {
  std::vector<std::int64_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) out[i] = std::int64_t(i);
  return out;
}
}  // namespace handle_detail

// A conversion to a dtype chosen at run time (cast<To>(h) when it is known at compile time).
inline graph_handle cast(const graph_handle& x, dtype to) {
  return x.builder->apply(ops::cast_op<float>::name, {x}, {{"to", std::string(dtype_name(to))}});
}
// Swaps the last two axes (a matrix transpose), or reorders axes by `perm`.
inline graph_handle transpose(const graph_handle& x, std::vector<std::int64_t> perm = {}) {
  if (perm.empty()) {
    perm = handle_detail::all_axes(x.rank());
    if (perm.size() >= 2) std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  }
  return x.builder->apply(ops::permute_op<0>::name, {x}, {{"perm", perm}});
}
inline graph_handle reshape(const graph_handle& x, std::vector<std::int64_t> target) {
  return x.builder->apply(ops::reshape_op<symflow::shape<1>>::name, {x}, {{"shape", std::move(target)}});
}
// Axes may be negative, counted from the last; the graph stores them from the first.
inline graph_handle slice(const graph_handle& x, std::int64_t axis, std::int64_t begin, std::int64_t end,
                          std::int64_t step = 1) {
  axis = handle_detail::from_first(axis, x.rank());
  return x.builder->apply(ops::slice_op<0>::name, {x}, {{"axis", axis}, {"begin", begin}, {"end", end}, {"step", step}});
}
// x reversed along `axis` (ops/flip.hpp).
inline graph_handle flip(const graph_handle& x, std::int64_t axis) {
  return x.builder->apply(ops::flip_op<0>::name, {x}, {{"axis", handle_detail::from_first(axis, x.rank())}});
}
inline graph_handle concat(const std::vector<graph_handle>& parts, std::int64_t axis) {
  axis = handle_detail::from_first(axis, parts.at(0).rank());
  return parts.at(0).builder->apply(ops::concat_op<0>::name, parts, {{"axis", axis}});
}
// data's slices along `axis` at integer indices (ops/gather.hpp); embedding(table, ids) is axis 0.
inline graph_handle gather(const graph_handle& data, const graph_handle& indices, std::int64_t axis = 0) {
  return data.builder->apply(ops::gather_op<0>::name, {data, indices}, {{"axis", handle_detail::from_first(axis, data.rank())}});
}
inline graph_handle embedding(const graph_handle& table, const graph_handle& ids) { return gather(table, ids, 0); }
// data's elements at per-element indices along `axis` (ops/gather_elements.hpp).
inline graph_handle gather_elements(const graph_handle& data, const graph_handle& indices, std::int64_t axis) {
  return data.builder->apply(ops::gather_elements_op<0>::name, {data, indices},
                             {{"axis", handle_detail::from_first(axis, data.rank())}});
}
// The index (i64) of the largest (smallest) element along `axis` (ops/argmax.hpp).
inline graph_handle argmax(const graph_handle& x, std::int64_t axis, bool keepdims = false, bool select_last_index = false) {
  return x.builder->apply(ops::argmax_op<0>::name, {x},
                          {{"axis", handle_detail::from_first(axis, x.rank())}, {"keepdims", keepdims},
                           {"select_last_index", select_last_index}});
}
inline graph_handle argmin(const graph_handle& x, std::int64_t axis, bool keepdims = false, bool select_last_index = false) {
  return x.builder->apply(ops::argmin_op<0>::name, {x},
                          {{"axis", handle_detail::from_first(axis, x.rank())}, {"keepdims", keepdims},
                           {"select_last_index", select_last_index}});
}
// Running sums along `axis` (ops/cumsum.hpp); cumsum<Axis, Exclusive, Reverse>(x) on types.
inline graph_handle cumsum(const graph_handle& x, std::int64_t axis, bool exclusive = false, bool reverse = false) {
  return x.builder->apply(ops::cumsum_op<0, 0, 0>::name, {x},
                          {{"axis", handle_detail::from_first(axis, x.rank())}, {"exclusive", std::int64_t(exclusive)},
                           {"reverse", std::int64_t(reverse)}});
}
// x padded by `pads` (ONNX order: every axis's begin, then every axis's end; ops/pad.hpp).
inline graph_handle pad(const graph_handle& x, std::vector<std::int64_t> pads, pad_mode mode = pad_mode::constant) {
  return x.builder->apply(ops::pad_op<0, 0, 0>::name, {x}, {{"pads", std::move(pads)}, {"mode", std::int64_t(mode)}});
}
inline graph_handle one_hot(const graph_handle& labels, std::int64_t depth, dtype to = dtype::f32) {
  return labels.builder->apply(ops::one_hot_op<1, float>::name, {labels},
                               {{"depth", depth}, {"to", std::string(dtype_name(to))}});
}

// With `like`'s dtype (a derivative rule's form, expr/derivative_rule.hpp).
inline graph_handle one_hot(const graph_handle& labels, std::int64_t depth, const graph_handle& like) {
  return one_hot(labels, depth, like.value_type());
}

// log(sum(exp(x))) over `axis` (the last by default), stabilised by the maximum (as logsumexp on types).
inline graph_handle logsumexp(const graph_handle& x, int axis = -1) {
  auto m = reduce_value(ops::max_op{}, x, {axis}, true);
  // summing the kept unit axis drops it
  return log(reduce_value(ops::sum_op{}, exp(x - m), {axis}, false)) + reduce_value(ops::sum_op{}, m, {axis}, false);
}
inline graph_handle log_softmax(const graph_handle& x, int axis = -1) {
  auto shifted = x - reduce_value(ops::max_op{}, x, {axis}, true);
  return shifted - log(reduce_value(ops::sum_op{}, exp(shifted), {axis}, true));
}
inline graph_handle softmax(const graph_handle& x, int axis = -1) { return exp(log_softmax(x, axis)); }

// Control flow (ir/control_flow/): the sub-graphs are graph values whose inputs take the operands
// in order (build them with a graph_builder of their own); `extra` are passed to every call.
// scan: body(state, xs[t], extra...) -> next state; the result stacks the states, [T, state...].
inline graph_handle scan(const graph& body, const graph_handle& init, const graph_handle& xs,
                         const std::vector<graph_handle>& extra = {}) {
  std::vector<graph_handle> in{init, xs};
  in.insert(in.end(), extra.begin(), extra.end());
  return init.builder->apply("scan", in, {{"body", subgraph{std::make_shared<const graph>(body)}}});
}
// cond: then_branch(x...) where pred is true, else else_branch(x...).
inline graph_handle cond(const graph_handle& pred, const graph& then_branch, const graph& else_branch,
                         const std::vector<graph_handle>& x) {
  std::vector<graph_handle> in{pred};
  in.insert(in.end(), x.begin(), x.end());
  return pred.builder->apply("cond", in, {{"then_branch", subgraph{std::make_shared<const graph>(then_branch)}},
                                          {"else_branch", subgraph{std::make_shared<const graph>(else_branch)}}});
}
// while_loop: state = body(state, extra...) while cond(state, extra...) holds, at most
// max_iterations times.
inline graph_handle while_loop(const graph& cond, const graph& body, const graph_handle& init,
                               const std::vector<graph_handle>& extra, std::int64_t max_iterations) {
  std::vector<graph_handle> in{init};
  in.insert(in.end(), extra.begin(), extra.end());
  return init.builder->apply("while", in, {{"cond", subgraph{std::make_shared<const graph>(cond)}},
                                           {"body", subgraph{std::make_shared<const graph>(body)}},
                                           {"max_iterations", max_iterations}});
}
}  // namespace graph_ops

}  // namespace symflow
