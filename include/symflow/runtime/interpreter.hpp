#pragma once
// Evaluates a graph value on the CPU. Per run: every node's extents are inferred from the feeds
// (by the ops' runtime forms) and checked against the graph's types; elementwise nodes of equal
// extents are fused into groups, each run as one pass over memory in cache-sized tiles (one SIMD loop
// per op over a tile held in L1, so a chain of N ops reads its operands and writes its results once);
// reductions, views and kernels (Eigen GEMM for matmul) run between the groups. Only what the outputs
// need is computed, and intermediates are freed after their last use.
//
// This is the header to include. A run's scratch (leaves, plan, uses, storage, reports) is
// run_state.hpp; the steps that compute its values are run_steps.hpp. The members that run them are
// interpreter_impl.hpp: compiled once per program under SYMFLOW_SEPARATE_COMPILATION
// (core/separate_compilation.hpp, SYMFLOW_LIBRARY_PART_INTERPRETER).
#include <memory>
#include <string>
#include <vector>

#include "../core/params.hpp"
#include "../core/separate_compilation.hpp"
#include "../ir/graph.hpp"
#include "../eval/nonfinite_report.hpp"
#include "trace.hpp"
#include "feeds.hpp"
#include "plan_cache.hpp"
#include "run_options.hpp"
#include "../ir/value.hpp"

namespace symflow::runtime_detail {
// What a run uses (run_state.hpp, buffer_pool.hpp, pass_cache.hpp): interpreter_impl.hpp includes
// them, so a unit that only declares the interpreter's members does not read the run steps.
struct run_context;
struct run_state;
class buffer_pool;
class pass_cache;
}  // namespace symflow::runtime_detail

namespace symflow {

class interpreter {
 public:
  explicit interpreter(graph g, interpreter_options options = {});

  // The graph it runs: the one it was given, with nodes on storage dtypes computing in their
  // compute dtypes between casts (storage_lowering.hpp); the same leaves and output types.
  const graph& source() const noexcept { return graph_; }
  // The structure its plans are cached under (plan_cache.hpp).
  const std::shared_ptr<const graph_structure>& structure() const noexcept { return structure_; }
  const interpreter_stats& last_stats() const noexcept { return stats_; }
  // What the last run recorded under options.trace, in evaluation order.
  const value_trace& last_trace() const noexcept { return trace_; }
  // Per-unit timings of the last run under options.profile.
  const interpreter_profile& last_profile() const noexcept { return profile_; }

  // The graph's outputs for these feeds (by input name). Parameters come from `store` when it holds
  // them, else from the values embedded in the graph.
  std::vector<runtime_tensor> run(const runtime_feeds& feeds, const params* store = nullptr) const {
    std::vector<runtime_tensor> outputs;
    run_into(outputs, feeds, store);
    return outputs;
  }

  // As run, writing into `outputs` and reusing each tensor's storage when its dtype and extents are
  // already right (first touching fresh memory costs about as much as a memory-bound pass; a loop
  // that runs a graph repeatedly should keep its outputs).
  void run_into(std::vector<runtime_tensor>& outputs, const runtime_feeds& feeds, const params* store = nullptr) const;

  // As run_into, with every input and parameter bound where its value lies (graph leaf order:
  // inputs, then parameters): nothing is copied in.
  void run_bound(std::vector<runtime_tensor>& outputs, const std::vector<bound_leaf>& leaves) const;

  // As run_bound, with output k's elements written to targets[k].data, which has room for
  // targets[k]'s dtype and extents: computed there where the output is a value of its own, else
  // copied there. An output of another dtype or extents is a shape_error naming it.
  void run_bound_into(const std::vector<output_target>& targets, const std::vector<bound_leaf>& leaves) const;

 private:
  runtime_detail::run_context context() const;
  void finish_run(runtime_detail::run_state& s, std::vector<runtime_tensor>& outputs) const;

  graph graph_;
  interpreter_options options_;
  std::shared_ptr<const graph_structure> structure_;  // plan_cache.hpp's key
  // Intermediates' storage, kept between runs (buffer_pool.hpp); shared by copies of the interpreter.
  // Both are made by the constructor.
  std::shared_ptr<runtime_detail::buffer_pool> pool_;
  // Fused passes of the last plans run, rebound by the next run of a plan (pass_cache.hpp); shared too.
  std::shared_ptr<runtime_detail::pass_cache> passes_;
  mutable interpreter_stats stats_;
  mutable value_trace trace_;
  mutable interpreter_profile profile_;
};

// Evaluates a graph once: interpreter(g).run(feeds, store).
inline std::vector<runtime_tensor> run_graph(const graph& g, const runtime_feeds& feeds, const params* store = nullptr) {
  return interpreter(g).run(feeds, store);
}

}  // namespace symflow

#if !SYMFLOW_LIBRARY_INTERPRETER_DECLARED_ONLY
#include "interpreter_impl.hpp"
#endif
