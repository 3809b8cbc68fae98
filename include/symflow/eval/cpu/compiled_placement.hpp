#pragma once
// The placement log for compiled evaluation: with the host placement log on, each distinct
// expression eval computes prints once where it ran and which ops it runs, by scoped name, read from
// its graph lowering (the same lowering check_numerics uses to localise, so no further template code).
#include <string>

#include "../../core/plain_tuple.hpp"
#include "../../core/parallel.hpp"
#include "../../ir/to_graph.hpp"
#include "../placement_log.hpp"

namespace symflow::detail {

template <class... E>
void log_compiled_placement(const plain_tuple<const E&...>& exprs) {
  if (!host_placement_log_enabled()) return;
  const graph g = apply_plain([](const auto&... e) { return to_graph(e...); }, exprs);
  std::string ops, results;
  for (const auto& n : g.nodes)
    if (!n.is_literal()) ops += (ops.empty() ? "" : ", ") + n.op + " '" + n.name + "'";
  for (auto o : g.outputs) results += (results.empty() ? "" : ", ") + graph_type_string(g.type_of(o));
  log_host_placement("cpu (" + std::to_string(cpu::max_threads()) + " threads): compiled evaluation of [" + ops +
                     "] -> " + results);
}

}  // namespace symflow::detail
