#pragma once
// The interpreter's members that plan and run a graph (interpreter.hpp), included there unless
// they are compiled once per program (core/separate_compilation.hpp,
// SYMFLOW_LIBRARY_PART_INTERPRETER): every unit that runs a graph would otherwise compile the
// planner, the fusion of passes and every run step again.
#include <string>
#include <utility>
#include <vector>

#include "interpreter.hpp"

#include "../ir/validate.hpp"
#include "buffer_pool.hpp"
#include "op_table.hpp"
#include "pass_cache.hpp"
#include "run_state.hpp"
#include "run_steps.hpp"
#include "storage_lowering.hpp"

namespace symflow {

namespace runtime_detail {
// run_bound and run_bound_into take one bound leaf per input and parameter, in graph order.
inline void check_bound_leaf_count(const graph& g, const std::vector<bound_leaf>& leaves) {
  const std::size_t expected = g.inputs.size() + g.parameters.size();
  if (leaves.size() != expected)
    throw value_error("interpreter: " + std::to_string(leaves.size()) + " bound leaves for a graph with " +
                      std::to_string(expected) + " inputs and parameters");
}
}  // namespace runtime_detail

SYMFLOW_LIBRARY_LINKAGE interpreter::interpreter(graph g, interpreter_options options)
    : graph_(std::move(g)), options_(options), pool_(std::make_shared<runtime_detail::buffer_pool>()),
      passes_(std::make_shared<runtime_detail::pass_cache>()) {
  validate(graph_, "interpreter");
  for (const auto& n : graph_.nodes)
    if (!n.is_literal() && !find_runtime_op(n.op) && !control_flow::is_control_flow(n.op))
      throw graph_error("interpreter: node '" + n.name + "': no runtime form for op '" + n.op + "'");
  graph_ = lower_storage_dtypes(std::move(graph_));  // ops on f16, u8, ... run in f32, i32, ...
  structure_ = std::make_shared<const graph_structure>(graph_);
}

SYMFLOW_LIBRARY_LINKAGE void interpreter::run_into(std::vector<runtime_tensor>& outputs, const runtime_feeds& feeds,
                                                   const params* store) const {
  outputs.resize(graph_.outputs.size());
  runtime_detail::run_state s(context(), feeds, store);
  s.bind_leaves(feeds, store);
  finish_run(s, outputs);
}

SYMFLOW_LIBRARY_LINKAGE void interpreter::run_bound(std::vector<runtime_tensor>& outputs,
                                                    const std::vector<bound_leaf>& leaves) const {
  runtime_detail::check_bound_leaf_count(graph_, leaves);
  outputs.resize(graph_.outputs.size());
  static const runtime_feeds no_feeds;
  runtime_detail::run_state s(context(), no_feeds, nullptr);
  s.bound = &leaves;
  s.bind_bound(leaves);
  finish_run(s, outputs);
}

SYMFLOW_LIBRARY_LINKAGE void interpreter::run_bound_into(const std::vector<output_target>& targets,
                                                         const std::vector<bound_leaf>& leaves) const {
  if (targets.size() != graph_.outputs.size())
    throw value_error("interpreter: " + std::to_string(targets.size()) + " output targets for a graph with " +
                      std::to_string(graph_.outputs.size()) + " outputs");
  runtime_detail::check_bound_leaf_count(graph_, leaves);
  static const runtime_feeds no_feeds;
  runtime_detail::run_state s(context(), no_feeds, nullptr);
  s.bound = &leaves;
  s.bind_bound(leaves);
  s.targets = &targets;
  std::vector<runtime_tensor> unused;
  runtime_detail::compute_outputs(s, unused);
  stats_ = s.stats;
  trace_ = std::move(s.trace);
  profile_ = std::move(s.profile);
  s.write_targets();
}

SYMFLOW_LIBRARY_LINKAGE runtime_detail::run_context interpreter::context() const {
  return {graph_, options_, structure_, *pool_, passes_.get()};
}

SYMFLOW_LIBRARY_LINKAGE void interpreter::finish_run(runtime_detail::run_state& s,
                                                     std::vector<runtime_tensor>& outputs) const {
  runtime_detail::compute_outputs(s, outputs);
  stats_ = s.stats;
  trace_ = std::move(s.trace);
  profile_ = std::move(s.profile);
  s.take_outputs(outputs);
}

}  // namespace symflow
