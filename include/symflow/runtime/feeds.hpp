#pragma once
// Which feeds a run of a graph value may be given: a feed whose name is no input or parameter of the
// graph is refused, since a misspelt name would otherwise leave the intended input unfed or a
// parameter stale (interpreter_options::allow_unused_feeds turns the check off).
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../eval/nonfinite_report.hpp"
#include "../ir/graph.hpp"

namespace symflow {

// A leaf's value where it already lies, not copied: how a typed evaluation hands its operands to a
// runtime program (runtime/program_gradient.hpp). Bound in the graph's leaf order: inputs, then
// parameters.
struct bound_leaf {
  dtype type = dtype::f32;
  runtime_extents extents;
  const void* data = nullptr;
};

// Where the caller wants an output's elements written, and the dtype and extents it made room for.
struct output_target {
  dtype type = dtype::f32;
  runtime_extents extents;
  void* data = nullptr;
};

// Throws value_error listing the feeds that name nothing in `g` (at most 8, each cut to 64 bytes).
inline void check_feeds_name_leaves(const graph& g, const runtime_feeds& feeds) {
  std::vector<std::string> unused;
  for (const auto& [name, value] : feeds) {
    bool used = false;
    for (const auto& in : g.inputs) used = used || in.name == name;
    for (const auto& p : g.parameters) used = used || p.name == name;
    if (!used) unused.push_back(name);
  }
  if (unused.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < unused.size() && i < 8; ++i)
    list += (i ? ", '" : "'") + unused[i].substr(0, 64) + (unused[i].size() > 64 ? "...'" : "'");
  if (unused.size() > 8) list += " and " + std::to_string(unused.size() - 8) + " more";
  throw value_error("interpreter: " + std::to_string(unused.size()) + " feed(s) name no input or parameter of the graph: " +
                    list + " (set interpreter_options::allow_unused_feeds to pass extra feeds)");
}

}  // namespace symflow
