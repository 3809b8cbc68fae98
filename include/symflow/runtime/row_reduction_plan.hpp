#pragma once
// Reductions over the last axis computed by the fused pass that computes their operand, row by row
// on its tiles, instead of by a unit of their own reading the operand back from memory. Layer norm
// composed from ops reduces z and (z - mean)^2 over each row, its gradient du * xhat and du: with the
// reductions in the passes, (z - mean)^2 and the products are never stored, and no reduction reads a
// [rows, width] array again. Each row is reduced by the function the reduction's own unit runs
// (op_table.hpp, reduce_rows_runtime, the same as reduce_typed for the last axis), over the same
// elements, so the results are the same bits; tiles hold whole rows (fused_pass.hpp).
//
// Reductions over every axis but the last — the column sums that are a bias's, gamma's and beta's
// gradients — likewise: each thread's tiles add their rows into a row of accumulators per block of
// rows, in the order the reduction's unit follows (column_reduction.hpp), so the operand is not
// stored for them and no unit reads it back (from the other core's cache, where the pass's other
// thread wrote half of it).
//
// A reduction joins the group of its operand when the operand is a member of a fused group, it
// reduces the last axis alone or every axis but the last, and a tile of whole rows that also
// starts on the SIMD packet grid (a multiple of the row length and of 16 elements) has at most
// max_tile elements. Only the CPU interpreter plans this (plan_cache.hpp), not in runs that check
// numerics or trace values.
#include <cstdint>
#include <numeric>
#include <vector>

#include "../ir/graph.hpp"
#include "op_table.hpp"
#include "plan.hpp"

namespace symflow {

namespace runtime_detail {
inline constexpr std::size_t row_reduction_max_tile = 8192;

// The tile length whose tiles hold whole rows of `row` elements and start on the packet grid.
inline std::size_t row_aligned_unit(std::size_t row) { return std::lcm(row, std::size_t(16)); }
}  // namespace runtime_detail

// Adds each qualifying reduction of `g` to the group of its operand (above).
inline void plan_row_reductions(const graph& g, const value_types& t, fusion_plan& p) {
  const std::size_t first = g.inputs.size() + g.parameters.size() + g.constants.size();
  for (std::uint32_t id = std::uint32_t(first); id < t.type.size(); ++id) {
    const graph_node& n = g.nodes[id - first];
    if (n.is_literal() || n.inputs.size() != 1) continue;
    const runtime_op* op = find_runtime_op(n.op);
    if (!op || op->kind != node_kind::reduction || !op->reduce_rows) continue;
    const std::uint32_t v = n.inputs[0];
    const int gi = p.group_of[v];
    const runtime_extents& e = t.extents[v];
    if (gi < 0 || e.empty() || e.back() == 0 || t.type[v] == dtype::boolean || t.type[v] != t.type[id]) continue;
    if (runtime_detail::row_aligned_unit(e.back()) > runtime_detail::row_reduction_max_tile) continue;
    if (!is_compute_dtype(t.type[v])) continue;
    const std::vector<bool> mask = reduced_axes_mask(describe_node(n), node_attributes(n), e.size());
    bool last_only = mask.back(), all_but_last = !mask.back();
    for (std::size_t i = 0; i + 1 < mask.size(); ++i) {
      last_only = last_only && (!mask[i] || e[i] == 1);
      all_but_last = all_but_last && (mask[i] || e[i] == 1);
    }
    if (!last_only && !all_but_last) continue;
    if (p.reduced_in.empty()) p.reduced_in.assign(t.type.size(), -1);
    p.reduced_in[id] = gi;
    fusion_group& group = p.groups[std::size_t(gi)];
    group.reductions.push_back(id);
    group.over_columns.push_back(char(!last_only));
  }
}

}  // namespace symflow
