#pragma once
// What the program route (program_gradient.hpp) does before it lowers a loss: find the loss's leaf
// objects, record the key of its lowering on the same walk (ir/lowering_key.hpp), and look for the
// program built from an equal key.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "../expr/node.hpp"
#include "../expr/structural.hpp"
#include "../ir/graph.hpp"
#include "../ir/lowering_key.hpp"
#include "program.hpp"

namespace symflow::detail::program {

// One object of each leaf of e, with its name, found by visiting each node object once, and the
// key of e's lowering recorded on the way (ir/lowering_key.hpp). (Keyed by name, not by the list of
// leaf types: the instances of find_leaves are then named after their node alone.)
struct found_leaf {
  std::string_view name;
  const void* leaf;
};
template <class E>
void find_leaves(const E& e, std::vector<found_leaf>& found, lowering_key_recorder& key) {
  if constexpr (is_leaf_node<E>::value) {
    key.node(e);
    constexpr std::string_view name = E::name.view();
    for (const auto& f : found)
      if (f.name == name) return;
    found.push_back({name, &e});
  } else if constexpr (E::kind == node_kind::accumulation) {
    if (!key.enter(node_identity(e))) return;
    key.node(e);
    for (const auto& t : e.items()) find_leaves(t, found, key);
  } else {
    if (!key.enter(node_identity(e))) return;
    key.node(e);
    if constexpr (has_operands<E>)
      std::apply([&](const auto&... a) SYMFLOW_INLINE_LAMBDA { (find_leaves(a, found, key), ...); }, e.args());
  }
}
// The leaf L among those found. Call it once to_graph has lowered an expression of the same type
// (this one, or the one its program was built from): a leaf's name then stands for one leaf type
// (to_graph refuses a name given to leaves of two types).
template <class L>
const L& found_as(const std::vector<found_leaf>& found) {
  constexpr std::string_view name = L::name.view();
  for (const auto& f : found)
    if (f.name == name) return *static_cast<const L*>(f.leaf);
  throw graph_error("grad: leaf '" + std::string(name) + "' was not found in the expression");
}

// The last program built for a loss type and the differentiated leaves' types, with the key of
// the loss it was built from (ir/lowering_key.hpp). A loss rebuilt with the same values (the next
// step of a training loop) gets that program back without being lowered to a graph; any other
// loss of the type takes the graph route (gradient_program, whose cache is keyed by the graph).
// The program is held weakly: it lives as long as that cache or an expression keeps it.
struct program_memo {
  std::mutex mutex;
  lowering_key key;
  std::weak_ptr<const runtime_program> program;

  // The program, when `fresh` is the key it was built from and it still lives.
  std::shared_ptr<const runtime_program> find(const lowering_key& fresh) {
    std::lock_guard lock(mutex);
    if (!key.matches(fresh)) return nullptr;
    auto found = program.lock();
    if (found) hits().fetch_add(1, std::memory_order_relaxed);
    return found;
  }
  void keep(const lowering_key& fresh, const std::shared_ptr<const runtime_program>& built) {
    if (!fresh.usable) return;
    std::lock_guard lock(mutex);
    key = fresh;
    program = built;
  }
  static std::atomic<std::size_t>& hits() {  // for tests: how often a key found its program
    static std::atomic<std::size_t> count{0};
    return count;
  }
};
// One memo per loss type and differentiated leaves' types (a function named after them, no
// closure: a lambda's type here would be named after the whole model once more).
template <class E, class... Wrt>
program_memo& program_memo_for() {
  static program_memo* memo = new program_memo;  // never destroyed, as the program cache
  return *memo;
}
inline lowering_key& scratch_lowering_key() {  // this thread's, reused from call to call
  thread_local lowering_key key;
  return key;
}

}  // namespace symflow::detail::program
