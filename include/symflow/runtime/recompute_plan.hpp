#pragma once
// Which elementwise values a fused pass computes again instead of reading them from memory
// (rematerialisation). A gradient's graph reads the forward pass's intermediates in its backward
// passes: composed layer norm and GELU leave seven [batch, width] values (the normalised input,
// GELU's u, 0.5u, 0.044715u, 0.044715u², 1 + tanh, 1 - tanh²) that the forward pass would write and the
// backward pass read back, when all the backward pass needs is what the forward pass itself read
// (its centred input, the row's 1/σ, γ, β). Elementwise work is far cheaper than the memory it
// would move, so a pass that reads such a value recomputes it, from the same inputs with the same
// kernels (the same bits), and the value is no longer stored at all when no other unit reads it.
//
// Group B computes values of group A itself when:
//  - each is no output of the graph, and every unit outside A reading it is a fused pass over A's
//    extents (a GEMM or a reduction reading it needs it in memory anyway);
//  - their cone (the values and what A's pass computes them from) has at most `max_cone` nodes;
//  - that moves less: the reads saved (and the writes, where no other pass reads the value) weigh
//    more than the cone's work per element plus the full-size inputs B would read in addition.
// All the values B reads from A are weighed together first (one recomputed chain yields them all),
// then one at a time.
// Only the CPU interpreter plans this (plan_cache.hpp, plan_for); runs that check numerics or
// trace values do not, so that every value they check or record is one a pass stores.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "../ir/graph.hpp"
#include "plan.hpp"

namespace symflow {

namespace runtime_detail {

class recompute_planner {
 public:
  static constexpr std::size_t max_cone = 32;

  recompute_planner(const graph& g, const value_types& t, fusion_plan& p)
      : g_(g), t_(t), p_(p), first_(g.inputs.size() + g.parameters.size() + g.constants.size()),
        readers_(t.type.size()), output_(t.type.size(), false) {
    for (std::uint32_t id = std::uint32_t(first_); id < t.type.size(); ++id)
      for (auto i : node(id).inputs)
        if (std::find(readers_[i].begin(), readers_[i].end(), id) == readers_[i].end()) readers_[i].push_back(id);
    for (auto o : g.outputs) output_[o] = true;
  }

  void run() {
    for (std::size_t a = 0; a < p_.groups.size(); ++a) {
      std::vector<int> readers;  // the groups that read a member of group a
      for (auto v : p_.groups[a].members)
        for (auto r : readers_[v]) {
          const int b = p_.group_of[r];
          if (b >= 0 && b != int(a) && std::find(readers.begin(), readers.end(), b) == readers.end()) readers.push_back(b);
        }
      for (int b : readers) {
        // All the values b reads from a at once (their cones overlap: one recomputed chain often
        // yields all of them), else one value at a time.
        const std::vector<std::uint32_t> all = candidates(int(a), b);
        if (all.size() > 1 && take(int(a), b, all)) continue;
        for (auto v : all) take(int(a), b, {v});
      }
    }
    for (auto& gr : p_.groups) std::sort(gr.recomputed.begin(), gr.recomputed.end());
  }

 private:
  const graph_node& node(std::uint32_t id) const { return g_.nodes[id - first_]; }

  bool in_pass(int gi, std::uint32_t v) const {
    const auto& r = p_.groups[std::size_t(gi)].recomputed;
    return p_.group_of[v] == gi || std::find(r.begin(), r.end(), v) != r.end();
  }
  std::size_t elements(std::uint32_t v) const { return element_count(t_.extents[v]); }

  // The members of group a that group b reads from memory and could compute itself: no output of
  // the graph, every unit outside a reading it a fused pass over a's extents.
  std::vector<std::uint32_t> candidates(int a, int b) const {
    std::vector<std::uint32_t> out;
    for (auto v : p_.groups[std::size_t(a)].members) {
      if (output_[v]) continue;
      bool read_by_b = false, passes_only = true;
      for (auto r : readers_[v]) {
        const int c = p_.unit_of(r);
        if (c == a) continue;  // a member, or a reduction the pass computes
        if (c < 0 || p_.groups[std::size_t(c)].extents != p_.groups[std::size_t(a)].extents) passes_only = false;
        if (c == b) read_by_b = true;
      }
      if (read_by_b && passes_only && !in_pass(b, v)) out.push_back(v);
    }
    return out;
  }

  // Whether group c (other than a) reads v, and will not compute it itself.
  bool other_reader(int a, int b, std::uint32_t v) const {
    for (auto r : readers_[v]) {
      const int c = p_.unit_of(r);
      if (c < 0 || (c != a && c != b && !in_pass(c, v))) return true;
    }
    return false;
  }

  // What computing one element of node c again costs, in units of one element moved to or from
  // memory (one float read or written). Measured on the interpreter's tile loops (AVX-512, a
  // [256, 256] pass): an arithmetic op per element costs about 0.4 of an element's transfer, a
  // transcendental about 1.5; an op without a SIMD form runs scalar code.
  double compute_cost(std::uint32_t c) const {
    const auto& k = t_.kernel[c];
    if (!k) return 4.0;
    if (!k->packet) return 2.0;
    return k->costly ? 1.5 : 0.4;
  }

  // Group b computes `values` of group a itself, if that moves less: saved, one read of each and
  // its write where no other unit reads it; spent, the cone's work and its full-size inputs b
  // does not read yet.
  bool take(int a, int b, const std::vector<std::uint32_t>& values) {
    std::vector<std::uint32_t> cone;
    std::vector<std::uint32_t> pending = values;
    for (auto v : values)
      if (std::find(cone.begin(), cone.end(), v) == cone.end()) cone.push_back(v);
    while (!pending.empty()) {
      const auto x = pending.back();
      pending.pop_back();
      for (auto i : node(x).inputs)
        if (in_pass(a, i) && !in_pass(b, i) && std::find(cone.begin(), cone.end(), i) == cone.end()) {
          if (cone.size() == max_cone) return false;
          cone.push_back(i);
          pending.push_back(i);
        }
    }
    const std::size_t full = elements(values.front());
    double saved = 0, spent = 0;
    for (auto v : values) saved += other_reader(a, b, v) ? 1.0 : 2.0;
    std::vector<std::uint32_t> new_reads;
    for (auto c : cone) {
      spent += compute_cost(c);
      for (auto i : node(c).inputs)
        if (std::find(cone.begin(), cone.end(), i) == cone.end() && !in_pass(b, i) && elements(i) == full &&
            !reads(b, i) && std::find(new_reads.begin(), new_reads.end(), i) == new_reads.end())
          new_reads.push_back(i);
    }
    spent += double(new_reads.size());
    if (spent >= saved) return false;
    auto& r = p_.groups[std::size_t(b)].recomputed;
    r.insert(r.end(), cone.begin(), cone.end());
    return true;
  }

  // Whether the pass of group b already reads value i from memory.
  bool reads(int b, std::uint32_t i) const {
    const fusion_group& B = p_.groups[std::size_t(b)];
    for (const auto* list : {&B.members, &B.recomputed})
      for (auto m : *list)
        for (auto x : node(m).inputs)
          if (x == i) return true;
    return false;
  }

  const graph& g_;
  const value_types& t_;
  fusion_plan& p_;
  std::size_t first_;
  std::vector<std::vector<std::uint32_t>> readers_;  // per value: the nodes reading it, each once
  std::vector<bool> output_;
};

}  // namespace runtime_detail

// Adds to each fusion group of `p` the values of other groups its pass computes again (above).
inline void plan_recomputation(const graph& g, const value_types& t, fusion_plan& p) {
  runtime_detail::recompute_planner(g, t, p).run();
}

}  // namespace symflow
