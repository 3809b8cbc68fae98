#pragma once
#include <atomic>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../../core/aligned_buffer.hpp"
#include "../output_destination.hpp"
#include "workspace_cache.hpp"
#include "../../core/params.hpp"
#include "../../expr/diagnostics.hpp"
#include "../../expr/leaves.hpp"
#include "../../expr/same_value.hpp"

namespace symflow::cpu {

// Instrument: how much work evaluations did, process-wide. Tests use it to show that shared
// subexpressions are computed once.
struct eval_counters {
  std::atomic<std::size_t> kernels{0};        // matmul, concat, ... runs
  std::atomic<std::size_t> reductions{0};     // materialised reductions (inner or root)
  std::atomic<std::size_t> fused_passes{0};   // fused elementwise loops
  std::atomic<std::size_t> reused{0};         // materialised values found already computed
  std::atomic<std::size_t> row_blocked{0};    // passes run in row blocks (row_blocks.hpp)
  void reset() {
    row_blocked = 0;
    kernels = 0;
    reductions = 0;
    fused_passes = 0;
    reused = 0;
  }
};
// Whether this thread's evaluation work goes uncounted: a pass split into row blocks
// (row_blocks.hpp) counts its first block, so that it counts like the single pass it replaces.
inline bool& counters_muted() {
  thread_local bool muted = false;
  return muted;
}
inline eval_counters& counters() {
  static eval_counters c;
  thread_local eval_counters ignored;
  return counters_muted() ? ignored : c;
}

// A value computed during one evaluation, remembered so that an identical node (same type, same
// runtime data) elsewhere in the expression reads it instead of computing it again.
struct materialised_value {
  const void* node = nullptr;
  same_value_fn same = nullptr;  // also stands for the node's type (see same_value_erased)
  const void* data = nullptr;
  std::size_t rank = 0;
  std::array<std::size_t, 8> extents{}, strides{};
};

// The values one evaluation (or one row block of it) has materialised, found again by node
// identity (same type, same runtime data).
struct materialised_memo {
  std::vector<materialised_value> materialised;

  template <class Node>
  const materialised_value* find_materialised(const Node& node) const {
    for (const auto& m : materialised)
      if (m.same == &same_value_erased<Node> && m.same(m.node, &node)) return &m;
    return nullptr;
  }
  template <class Node>
  void remember(const Node& node, materialised_value value) {
    value.node = &node;
    value.same = &same_value_erased<Node>;
    materialised.push_back(value);
  }
};

template <class S>
inline constexpr bool is_params_v = std::is_same_v<std::remove_cvref_t<S>, params>;

// What one evaluation reads (feeds and at most one parameter store) and the scratch memory it
// owns for materialised intermediates. Lives for the duration of one eval call.
template <class... Sources>
struct eval_context : materialised_memo {
  static_assert(((is_feed_binding_v<Sources> || is_params_v<Sources>) && ...),
                "symflow: eval takes an expression followed by feeds (x = tensor) and optionally a params store");
  static_assert((std::size_t(is_params_v<Sources>) + ... + 0) <= 1, "symflow: pass at most one params store");

  std::tuple<const Sources&...> sources;
  std::vector<aligned_buffer<unsigned char>> workspace;
  // Results that a multi-output kernel writes in place (eval/output_destination.hpp).
  output_destinations destinations;

  explicit eval_context(const Sources&... s) : sources(s...) {}
  eval_context(const eval_context&) = delete;
  eval_context& operator=(const eval_context&) = delete;
  // The workspace goes back to this thread's cache for the next evaluation (workspace_cache.hpp).
  ~eval_context() {
    auto& cache = thread_workspace_cache();
    for (auto& block : workspace) cache.give(std::move(block));
  }

  template <class T>
  T* allocate(std::size_t count) {
    workspace.push_back(thread_workspace_cache().take(count * sizeof(T)));
    return reinterpret_cast<T*>(workspace.back().data());
  }

  static constexpr std::size_t npos = std::size_t(-1);

  template <fixed_string Name>
  static consteval std::size_t feed_index() {
    std::size_t found = npos, i = 0;
    ((found = (found == npos && feed_matches<Name, Sources>()) ? i : found, ++i), ...);
    return found;
  }
  static consteval std::size_t params_index() {
    std::size_t found = npos, i = 0;
    ((found = (found == npos && is_params_v<Sources>) ? i : found, ++i), ...);
    return found;
  }

 private:
  template <fixed_string Name, class S>
  static consteval bool feed_matches() {
    if constexpr (is_feed_binding_v<S>) return S::name == Name;
    else return false;
  }
};

// The context of an evaluation whose output expressions are known: lets the evaluator see how often
// a subexpression occurs across all of them.
template <class Roots, class... Sources>
struct rooted_context : eval_context<Sources...> {
  using roots = Roots;
  using eval_context<Sources...>::eval_context;
};

// The messages of the compile errors on feeds (named_leaf_evaluator; expr/diagnostics.hpp), e.g.
// "eval: placeholder x: f32[?,784] is not fed; pass `x = tensor` to eval". (No quotes: g++ escapes
// them in the printed template argument.)
enum class feed_problem { not_fed, no_value, wrong_dtype, wrong_rank };
template <class Leaf, feed_problem Problem, class FedType = void, std::size_t FedRank = 0>
consteval diag::text feed_message() {
  diag::text t;
  t << "eval: " << (Leaf::kind == node_kind::variable ? "variable " : "placeholder ") << Leaf::name.view() << ": ";
  diag::append_type<typename Leaf::value_type, typename Leaf::shape_type>(t);
  if constexpr (Problem == feed_problem::not_fed)
    t << " is not fed; pass `" << Leaf::name.view() << " = tensor` to eval";
  else if constexpr (Problem == feed_problem::no_value)
    t << " has no value; pass `" << Leaf::name.view() << " = tensor` or a params store to eval";
  else if constexpr (Problem == feed_problem::wrong_dtype)
    t << " is fed a tensor of dtype " << diag::dtype_text<FedType>();
  else
    t << " is fed a tensor of rank ";
  if constexpr (Problem == feed_problem::wrong_rank) t.extent(FedRank);
  return t;
}

}  // namespace symflow::cpu
