#pragma once
// Process-wide caches that let a program rebuild the same graph again and again (a training loop
// that builds its graph per step) and pay for differentiating and planning it once:
//  - runtime_plan_cache(): an interpreter's plan (every node's dtype, extents and kernel, and the
//    fusion groups), keyed by the graph's structure, the dtypes and extents of its leaves in that
//    run and the fuse option;
//  - gradient_cache(): differentiate()'s result, keyed by the graph's structure and the wrt list.
// The structure is everything in a graph value except tensor data (constants' element bytes,
// parameters' embedded values): ops, attributes (literal values included), operand ids, declared
// types, names, scopes, source locations, leaves and outputs. A lookup hashes the structure, then
// compares it in full with the entry's, so a hash collision never returns another graph's result.
// Both caches are bounded (least recently used entries go first), locked (safe to use from several
// threads), and can be cleared, resized (0 turns one off) and asked for their hit counts.
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "../ir/graph.hpp"
#include "../ir/structure_hasher.hpp"
#include "plan.hpp"
#include "recompute_plan.hpp"
#include "row_reduction_plan.hpp"

namespace symflow {

namespace plan_cache_detail {

// The hash of graph pieces, shared with to_graph (ir/structure_hasher.hpp).
using hasher = structure_hasher;

// A leaf, with an embedded value's presence, dtype and extents but not its elements.
inline void add_leaf(hasher& h, const graph_leaf& l) {
  h.add(l.name);
  h.add(l.scope);
  h.add(l.type);
  h.add(l.where);
  h.add(std::uint64_t(l.value.has_value()));
  if (l.value) {
    h.add(std::uint64_t(l.value->type));
    h.add(l.value->extents);
  }
}

inline bool same_leaf(const graph_leaf& a, const graph_leaf& b) {
  return a.name == b.name && a.scope == b.scope && a.type == b.type && a.where == b.where &&
         a.value.has_value() == b.value.has_value() &&
         (!a.value || (a.value->type == b.value->type && a.value->extents == b.value->extents));
}

}  // namespace plan_cache_detail

// The structure's hash (see above: everything but tensor elements).
inline std::uint64_t graph_structure_hash(const graph& g) {
  plan_cache_detail::hasher h;
  h.add(std::uint64_t(g.inputs.size()));
  for (const auto& l : g.inputs) plan_cache_detail::add_leaf(h, l);
  h.add(std::uint64_t(g.parameters.size()));
  for (const auto& l : g.parameters) plan_cache_detail::add_leaf(h, l);
  h.add(std::uint64_t(g.constants.size()));
  for (const auto& c : g.constants) {
    h.add(c.name);
    h.add(c.type);
    h.add(c.where);
    h.add(std::uint64_t(c.data.type));
    h.add(c.data.extents);
  }
  h.add(std::uint64_t(g.nodes.size()));
  for (const auto& n : g.nodes) {
    h.add(n.op);
    h.add(n.name);
    h.add(std::uint64_t(n.attributes.size()));
    for (const auto& a : n.attributes) {
      h.add(a.key);
      h.add(a.value);
    }
    h.add(std::uint64_t(n.inputs.size()));
    for (auto i : n.inputs) h.add(std::uint64_t(i));
    h.add(n.type);
    h.add(n.where);
  }
  h.add(std::uint64_t(g.outputs.size()));
  for (auto o : g.outputs) h.add(std::uint64_t(o));
  return h.value();
}

// Equal structures (everything the hash covers, compared exactly).
inline bool same_graph_structure(const graph& a, const graph& b) {
  using plan_cache_detail::same_leaf;
  if (a.inputs.size() != b.inputs.size() || a.parameters.size() != b.parameters.size() ||
      a.constants.size() != b.constants.size() || a.nodes != b.nodes || a.outputs != b.outputs)
    return false;
  for (std::size_t i = 0; i < a.inputs.size(); ++i)
    if (!same_leaf(a.inputs[i], b.inputs[i])) return false;
  for (std::size_t i = 0; i < a.parameters.size(); ++i)
    if (!same_leaf(a.parameters[i], b.parameters[i])) return false;
  for (std::size_t i = 0; i < a.constants.size(); ++i) {
    const auto &x = a.constants[i], &y = b.constants[i];
    if (x.name != y.name || x.type != y.type || x.where != y.where || x.data.type != y.data.type ||
        x.data.extents != y.data.extents)
      return false;
  }
  return true;
}

// A copy of the structure: the graph without its constants' element bytes and its parameters'
// embedded elements (their dtype and extents stay). Cache entries keep this, not the data.
inline graph strip_graph_data(const graph& g) {
  graph s;
  s.inputs = g.inputs;
  s.parameters.reserve(g.parameters.size());
  for (const auto& p : g.parameters) {
    graph_leaf copy{p.name, p.scope, p.type, p.where, std::nullopt};
    if (p.value) copy.value = graph_tensor{p.value->type, p.value->extents, {}};
    s.parameters.push_back(std::move(copy));
  }
  s.constants.reserve(g.constants.size());
  for (const auto& c : g.constants)
    s.constants.push_back(graph_constant{c.name, c.type, c.where, graph_tensor{c.data.type, c.data.extents, {}}});
  s.nodes = g.nodes;
  s.outputs = g.outputs;
  return s;
}

// A graph's structure with its hash, shared by an interpreter and the cache entries made for it.
struct graph_structure {
  graph shape;  // strip_graph_data of the graph
  std::uint64_t hash = 0;

  explicit graph_structure(const graph& g) : shape(strip_graph_data(g)), hash(graph_structure_hash(g)) {}
  bool matches(const graph& g, std::uint64_t h) const { return hash == h && same_graph_structure(shape, g); }
};

struct graph_cache_stats {
  std::size_t hits = 0, misses = 0, size = 0, capacity = 0;
};

// A bounded map from a 64-bit hash to entries (several per hash allowed), least recently used first
// out; a lookup's predicate decides which entry under the hash, if any, matches. Locked.
template <class Entry>
class graph_lru_cache {
 public:
  explicit graph_lru_cache(std::size_t capacity) : capacity_(capacity) {}

  template <class Match>
  std::shared_ptr<const Entry> find(std::uint64_t hash, Match&& match) {
    std::lock_guard lock(mutex_);
    auto [lo, hi] = index_.equal_range(hash);
    for (auto it = lo; it != hi; ++it)
      if (match(*it->second->second)) {
        order_.splice(order_.begin(), order_, it->second);
        ++hits_;
        return it->second->second;
      }
    ++misses_;
    return nullptr;
  }

  void insert(std::uint64_t hash, std::shared_ptr<const Entry> e) {
    std::lock_guard lock(mutex_);
    if (capacity_ == 0) return;
    order_.emplace_front(hash, std::move(e));
    index_.emplace(hash, order_.begin());
    trim();
  }

  graph_cache_stats stats() const {
    std::lock_guard lock(mutex_);
    return {hits_, misses_, order_.size(), capacity_};
  }
  // Entries beyond the new capacity are dropped (least recently used first); 0 turns the cache off.
  void set_capacity(std::size_t n) {
    std::lock_guard lock(mutex_);
    capacity_ = n;
    trim();
  }
  // Drops every entry and zeroes the counts.
  void clear() {
    std::lock_guard lock(mutex_);
    order_.clear();
    index_.clear();
    hits_ = misses_ = 0;
  }

 private:
  using item = std::pair<std::uint64_t, std::shared_ptr<const Entry>>;
  void trim() {
    while (order_.size() > capacity_) {
      auto last = std::prev(order_.end());
      auto [lo, hi] = index_.equal_range(last->first);
      for (auto it = lo; it != hi; ++it)
        if (it->second == last) {
          index_.erase(it);
          break;
        }
      order_.pop_back();
    }
  }

  mutable std::mutex mutex_;
  std::size_t capacity_;
  std::list<item> order_;  // most recently used first
  std::unordered_multimap<std::uint64_t, typename std::list<item>::iterator> index_;
  std::size_t hits_ = 0, misses_ = 0;
};

// An interpreter's plan for one graph structure and one set of leaf dtypes and extents: what
// infer_node_types and plan_fusion_groups compute (both depend on nothing else).
struct runtime_plan {
  std::shared_ptr<const graph_structure> structure;
  std::vector<dtype> leaf_types;
  std::vector<runtime_extents> leaf_extents;
  bool fuse = true;
  bool recompute = false;       // plan_recomputation applied (recompute_plan.hpp)
  bool row_reductions = false;  // plan_row_reductions applied (row_reduction_plan.hpp)
  value_types types;
  fusion_plan fusion;
};

inline graph_lru_cache<runtime_plan>& runtime_plan_cache() {
  static graph_lru_cache<runtime_plan>* cache = new graph_lru_cache<runtime_plan>(64);  // never destroyed
  return *cache;
}

namespace plan_cache_detail {
inline std::uint64_t plan_key(const graph_structure& s, const std::vector<dtype>& types,
                              const std::vector<runtime_extents>& extents, bool fuse, bool recompute,
                              bool row_reductions) {
  hasher h;
  h.add(s.hash);
  h.add(std::uint64_t(fuse) | std::uint64_t(recompute) << 1 | std::uint64_t(row_reductions) << 2);
  for (std::size_t i = 0; i < types.size(); ++i) {
    h.add(std::uint64_t(types[i]));
    h.add(std::uint64_t(extents[i].size()));
    for (auto e : extents[i]) h.add(std::uint64_t(e));
  }
  return h.value();
}
}  // namespace plan_cache_detail

// The plan for graph `g` (whose structure is `s`) with these leaf dtypes and extents (inputs,
// parameters, constants, in id order): from the cache, else computed (throwing as
// infer_node_types does when the leaves do not fit the graph) and remembered. `row_reductions`:
// reductions over the last axis run in the passes computing their operands (row_reduction_plan.hpp);
// `recompute`: fused passes compute again the values they would otherwise read back
// (recompute_plan.hpp).
inline std::shared_ptr<const runtime_plan> plan_for(const graph& g, const std::shared_ptr<const graph_structure>& s,
                                                    std::vector<dtype> leaf_types,
                                                    std::vector<runtime_extents> leaf_extents, bool fuse,
                                                    bool recompute = false, bool row_reductions = false) {
  recompute = recompute && fuse;
  row_reductions = row_reductions && fuse;
  const std::uint64_t key = plan_cache_detail::plan_key(*s, leaf_types, leaf_extents, fuse, recompute, row_reductions);
  auto hit = runtime_plan_cache().find(key, [&](const runtime_plan& p) {
    return p.fuse == fuse && p.recompute == recompute && p.row_reductions == row_reductions && p.leaf_types == leaf_types && p.leaf_extents == leaf_extents &&
           (p.structure == s || (p.structure->hash == s->hash && same_graph_structure(p.structure->shape, s->shape)));
  });
  if (hit) return hit;
  auto p = std::make_shared<runtime_plan>();
  p->structure = s;
  p->fuse = fuse;
  p->recompute = recompute;
  p->row_reductions = row_reductions;
  p->types = value_types(g.value_count());
  for (std::size_t id = 0; id < leaf_types.size(); ++id) {
    p->types.type[id] = leaf_types[id];
    p->types.extents[id] = leaf_extents[id];
  }
  infer_node_types(g, p->types);
  p->fusion = plan_fusion_groups(g, p->types, fuse);
  if (row_reductions) plan_row_reductions(g, p->types, p->fusion);
  if (recompute) plan_recomputation(g, p->types, p->fusion);
  p->leaf_types = std::move(leaf_types);
  p->leaf_extents = std::move(leaf_extents);
  std::shared_ptr<const runtime_plan> done = std::move(p);
  runtime_plan_cache().insert(key, done);
  return done;
}

}  // namespace symflow
