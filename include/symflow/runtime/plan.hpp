#pragma once
// What every executor of a graph value does before running anything, shared by the CPU interpreter
// (interpreter.hpp) and the GPU graph runner (cuda/nvrtc/graph_runner.hpp):
//  - node types: every node's dtype and extents from its operands' (by the ops' own rules,
//    infer_node_type), checked against the types the graph records;
//  - fusion groups: elementwise nodes of equal extents joined into groups, each computed in one pass.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../ir/control_flow/list.hpp"
#include "../ir/graph.hpp"
#include "op_table.hpp"
#include "../ir/value.hpp"

namespace symflow {

// "op 'scoped/name' (file:line)", as the interpreter's messages name a node.
inline std::string describe_node(const graph_node& n) {
  return n.op + " '" + n.name + "'" + (n.where.line ? " (" + n.where.file + ":" + std::to_string(n.where.line) + ")" : "");
}

// Types of every value of `g`: the caller fills the leaves' entries (inputs, parameters, constants:
// the first g.inputs.size() + g.parameters.size() + g.constants.size() ids); this fills the nodes'
// and, for elementwise nodes, their kernel (the op's scalar/SIMD function for those operand dtypes,
// which also marks them as fusible). Throws shape_error naming the node when a node's inferred
// type disagrees with the graph's.
struct value_types {
  std::vector<dtype> type;
  std::vector<runtime_extents> extents;
  std::vector<std::optional<elementwise_kernel>> kernel;
  explicit value_types(std::size_t n = 0) : type(n, dtype::f32), extents(n), kernel(n) {}
};

inline void infer_node_types(const graph& g, value_types& t);

namespace runtime_detail {
// What a control-flow op's extents rule (ir/control_flow/) asks: the extents of a sub-graph's
// outputs for arguments of these dtypes and extents, by the same inference as any graph's.
struct body_extents {
  std::vector<runtime_extents> extents(const graph& body, const std::vector<dtype>& types,
                                       const std::vector<runtime_extents>& args) const {
    value_types t(body.value_count());
    std::size_t id = 0;
    for (std::size_t k = 0; k < body.inputs.size(); ++k, ++id) {
      const graph_leaf& in = body.inputs[k];
      bool ok = types.at(k) == in.type.type && args.at(k).size() == in.type.shape.size();
      for (std::size_t i = 0; ok && i < args[k].size(); ++i) ok = in.type.shape[i] < 0 || std::size_t(in.type.shape[i]) == args[k][i];
      if (!ok)
        throw shape_error("sub-graph input '" + in.name + "' is given " + std::string(dtype_name(types[k])) +
                          format_extents(args[k]) + ", it takes " + graph_type_string(in.type));
      t.type[id] = types[k];
      t.extents[id] = args[k];
    }
    for (const auto& c : body.constants) {
      t.type[id] = c.data.type;
      t.extents[id++] = runtime_extents(c.data.extents.begin(), c.data.extents.end());
    }
    infer_node_types(body, t);
    std::vector<runtime_extents> out;
    for (auto o : body.outputs) out.push_back(t.extents[o]);
    return out;
  }
};
}  // namespace runtime_detail

inline void infer_node_types(const graph& g, value_types& t) {
  const std::size_t first = g.inputs.size() + g.parameters.size() + g.constants.size();
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const std::size_t id = first + k;
    const graph_node& n = g.nodes[k];
    std::vector<dtype> in_types;
    std::vector<runtime_extents> in_extents;
    for (auto i : n.inputs) {
      in_types.push_back(t.type[i]);
      in_extents.push_back(t.extents[i]);
    }
    if (n.is_literal()) {
      t.type[id] = n.type.type;
      t.extents[id] = {};
    } else if (control_flow::is_control_flow(n.op)) {  // its dtype is checked by validate()
      runtime_detail::body_extents bodies;
      control_flow::visit(n.op, [&](auto op) { t.extents[id] = op.extents(bodies, n, in_types, in_extents, describe_node(n)); });
      t.type[id] = n.type.type;
    } else {
      auto r = infer_node_type(*find_runtime_op(n.op), node_attributes(n), in_types, in_extents, describe_node(n));
      t.type[id] = r.type;
      t.extents[id] = std::move(r.extents);
      t.kernel[id] = r.kernel;
    }
    const auto& e = t.extents[id];
    bool ok = t.type[id] == n.type.type && e.size() == n.type.shape.size();
    for (std::size_t i = 0; ok && i < e.size(); ++i) ok = n.type.shape[i] < 0 || std::size_t(n.type.shape[i]) == e[i];
    if (!ok) {
      std::string operands;
      for (std::size_t i = 0; i < in_types.size(); ++i)
        operands += (operands.empty() ? "" : ", ") + std::string(dtype_name(in_types[i])) + format_extents(in_extents[i]);
      throw shape_error(describe_node(n) + ": computes " + std::string(dtype_name(t.type[id])) + format_extents(e) +
                        " from operands (" + operands + "), the graph says " + graph_type_string(n.type));
    }
  }
}

struct fusion_group {
  std::vector<std::uint32_t> members;  // value ids, ascending
  runtime_extents extents;
  // Values of other groups this group's pass computes again instead of reading them (ascending;
  // the CPU interpreter's plans only: recompute_plan.hpp).
  std::vector<std::uint32_t> recomputed{};
  // Reductions of a member computed on the pass's tiles (ascending; the CPU interpreter's plans
  // only: row_reduction_plan.hpp), over its last axis, or over every other axis where
  // over_columns[k] is set.
  std::vector<std::uint32_t> reductions{};
  std::vector<char> over_columns{};
};

struct fusion_plan {
  std::vector<int> group_of;  // per value id; -1 outside any group
  std::vector<fusion_group> groups;  // some may be empty (merged into another)
  // Per value id: the group whose pass computes this reduction (fusion_group::reductions), else -1;
  // empty when no reduction is fused.
  std::vector<int> reduced_in{};
  // The group whose pass computes value id (a member or a fused reduction), or -1.
  int unit_of(std::uint32_t id) const {
    if (group_of[id] >= 0) return group_of[id];
    return reduced_in.empty() ? -1 : reduced_in[id];
  }
};

namespace runtime_detail {
class fusion_planner {
 public:
  fusion_planner(const graph& g, const value_types& t)
      : g_(g), t_(t), first_(g.inputs.size() + g.parameters.size() + g.constants.size()) {
    plan_.group_of.assign(t.type.size(), -1);
  }

  fusion_plan run(bool fuse) && {
    auto& group_of = plan_.group_of;
    auto& groups = plan_.groups;
    for (std::uint32_t id = std::uint32_t(first_); id < t_.type.size(); ++id) {
      if (!fusible(id)) continue;
      std::vector<int> candidates;
      if (fuse)
        for (auto i : node(id).inputs)
          if (fusible(i) && group_of[i] >= 0 && t_.extents[i] == t_.extents[id] &&
              std::find(candidates.begin(), candidates.end(), group_of[i]) == candidates.end())
            candidates.push_back(group_of[i]);
      int target = -1;
      for (int c : candidates) {
        if (target < 0) {
          if (can_join(id, c)) target = c;
        } else if (can_merge(target, c, id)) {
          merge(target, c);
        }
      }
      if (target < 0) {
        target = int(groups.size());
        groups.push_back(fusion_group{{}, t_.extents[id]});
      }
      groups[target].members.push_back(id);
      group_of[id] = target;
    }
    for (auto& gr : groups) std::sort(gr.members.begin(), gr.members.end());
    return std::move(plan_);
  }

 private:
  const graph_node& node(std::uint32_t id) const { return g_.nodes[id - first_]; }
  bool is_node(std::uint32_t id) const { return id >= first_; }
  bool fusible(std::uint32_t id) const { return is_node(id) && t_.kernel[id].has_value(); }

  // Does value `from` depend on a member of group `gi`? A value in another group waits for
  // everything that group reads, so the search goes through all its members (and so node ids
  // give no bound: an early node's group may hold later ones).
  // Visited marks are stamps (this search's number) in arrays kept across searches, not sets built
  // per search: the planner runs this for every operand of every elementwise node.
  bool depends_on_group(std::uint32_t from, int gi) const {
    if (++epoch_ == 0) {  // wrapped: old stamps could collide
      std::fill(seen_.begin(), seen_.end(), 0u);
      std::fill(expanded_.begin(), expanded_.end(), 0u);
      epoch_ = 1;
    }
    if (seen_.size() < t_.type.size()) seen_.resize(t_.type.size(), 0u);
    if (expanded_.size() < plan_.groups.size()) expanded_.resize(plan_.groups.size(), 0u);
    stack_.assign(1, from);
    while (!stack_.empty()) {
      const auto v = stack_.back();
      stack_.pop_back();
      if (!is_node(v) || seen_[v] == epoch_) continue;
      seen_[v] = epoch_;
      const int gv = plan_.group_of[v];
      if (gv == gi) return true;
      if (gv >= 0 && expanded_[std::size_t(gv)] != epoch_) {
        expanded_[std::size_t(gv)] = epoch_;
        for (auto m : plan_.groups[std::size_t(gv)].members) stack_.push_back(m);
      }
      for (auto i : node(v).inputs) stack_.push_back(i);
    }
    return false;
  }
  bool can_join(std::uint32_t id, int gi) const {
    for (auto i : node(id).inputs)
      if (plan_.group_of[i] != gi && depends_on_group(i, gi)) return false;
    return true;
  }
  // Merging group b (and node id) into a: neither may read a value depending on the other.
  bool can_merge(int a, int b, std::uint32_t id) const {
    const auto& group_of = plan_.group_of;
    auto externals_clear = [&](int reader, int other) {
      for (auto m : plan_.groups[reader].members)
        for (auto i : node(m).inputs)
          if (group_of[i] != reader && group_of[i] != other && depends_on_group(i, other)) return false;
      return true;
    };
    if (!externals_clear(a, b) || !externals_clear(b, a)) return false;
    for (auto i : node(id).inputs)
      if (group_of[i] != a && group_of[i] != b && (depends_on_group(i, b) || depends_on_group(i, a))) return false;
    return true;
  }
  void merge(int into, int from) {
    auto& groups = plan_.groups;
    for (auto m : groups[from].members) {
      plan_.group_of[m] = into;
      groups[into].members.push_back(m);
    }
    groups[from].members.clear();
    std::sort(groups[into].members.begin(), groups[into].members.end());
  }

  const graph& g_;
  const value_types& t_;
  std::size_t first_;
  fusion_plan plan_;
  mutable std::vector<std::uint32_t> seen_, expanded_;  // depends_on_group's stamps
  mutable std::vector<std::uint32_t> stack_;
  mutable std::uint32_t epoch_ = 0;
};
}  // namespace runtime_detail

// Joins elementwise nodes (those with a kernel in `t`) into the groups of their elementwise operands
// of equal extents, unless a group would then read a value that itself depends on the group (which
// could not be computed before the group's pass). `fuse = false`: every such node is its own group.
inline fusion_plan plan_fusion_groups(const graph& g, const value_types& t, bool fuse = true) {
  return runtime_detail::fusion_planner(g, t).run(fuse);
}

// A pass's index space: the group's extents with extent-1 axes dropped and adjacent axes merged
// wherever every input is contiguous across them (at least one axis), and each input's strides along
// the merged axes. `strides[k]` are input k's strides along the extents' axes (0 where broadcast).
struct merged_axes {
  runtime_extents dims;
  std::vector<std::vector<std::size_t>> strides;
};
inline merged_axes merge_axes(const runtime_extents& extents, const std::vector<std::vector<std::size_t>>& strides) {
  merged_axes m;
  m.strides.assign(strides.size(), {});
  for (std::size_t i = 0; i < extents.size(); ++i) {
    if (extents[i] == 1) continue;
    bool merge_with_previous = !m.dims.empty();
    for (std::size_t k = 0; merge_with_previous && k < strides.size(); ++k)
      merge_with_previous = m.strides[k].back() == strides[k][i] * extents[i];
    if (merge_with_previous) {
      m.dims.back() *= extents[i];
      for (std::size_t k = 0; k < strides.size(); ++k) m.strides[k].back() = strides[k][i];
    } else {
      m.dims.push_back(extents[i]);
      for (std::size_t k = 0; k < strides.size(); ++k) m.strides[k].push_back(strides[k][i]);
    }
  }
  if (m.dims.empty()) {
    m.dims.push_back(1);
    for (auto& s : m.strides) s.push_back(0);
  }
  return m;
}

// The strides, along `rank` axes, of a contiguous value of extents `x` broadcast to them (numpy's
// alignment from the right; 0 along its extent-1 and missing axes).
inline std::vector<std::size_t> broadcast_strides(std::size_t rank, const runtime_extents& x) {
  std::vector<std::size_t> strides(rank, 0);
  std::size_t s = 1;
  for (std::size_t i = x.size(); i-- > 0;) {
    if (x[i] != 1) strides[rank - x.size() + i] = s;
    s *= x[i];
  }
  return strides;
}

}  // namespace symflow
