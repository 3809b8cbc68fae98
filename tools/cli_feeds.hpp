#pragma once
// The `symflow run` tool's feed handling, in a header of its own so that the fuzz target
// fuzz/fuzz_cli_feed.cpp runs exactly what the tool runs: parsing "--feed NAME=PATH.npy", checking
// NAME against the graph, and turning the array read from PATH into an interpreter feed or a
// parameter value. Every refusal is a symflow::error (usage_error for a bad command line).
#include <algorithm>
#include <map>
#include <cstring>
#include <string>
#include <string_view>

#include <symflow/core/excerpt.hpp>
#include <symflow/core/params.hpp>
#include <symflow/ir/graph.hpp>
#include <symflow/io/npy.hpp>

namespace symflow::cli {

// A bad command line: reported like any other bad input.
class usage_error : public error {
 public:
  using error::error;
};

struct feed_spec {
  std::string name, path;
};

// "NAME=PATH": both parts non-empty; the first '=' separates them (a path may hold '=').
inline feed_spec parse_feed_spec(std::string_view spec) {
  const auto eq = spec.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == spec.size())
    throw usage_error("run: --feed wants NAME=PATH.npy, not '" + detail::excerpt(spec, 200) + "'");
  return {std::string(spec.substr(0, eq)), std::string(spec.substr(eq + 1))};
}

// Where the feeds of one run go: inputs (the interpreter's feeds), parameters (a params store that
// replaces values embedded in the graph). Plain graph tensors, so that this header needs nothing of
// the interpreter (the fuzz targets build with clang 14).
struct feed_set {
  std::map<std::string, graph_tensor, std::less<>> inputs;
  params parameters;
};

// Whether the graph has an input (true) or parameter (false) named `name`, not fed yet; refused otherwise.
inline bool check_feed_name(const graph& g, const std::string& name, const feed_set& fed) {
  const bool is_input = std::any_of(g.inputs.begin(), g.inputs.end(), [&](const graph_leaf& l) { return l.name == name; });
  const bool is_parameter =
      std::any_of(g.parameters.begin(), g.parameters.end(), [&](const graph_leaf& l) { return l.name == name; });
  if (!is_input && !is_parameter)
    throw usage_error("run: the graph has no input or parameter named '" + detail::excerpt(name, 200) + "'");
  if (fed.inputs.contains(name) || fed.parameters.contains(name))
    throw usage_error("run: two --feed options for '" + detail::excerpt(name, 200) + "'");
  return is_input;
}

// Adds the array `value` under `name` (checked first). Dtype and shape are checked by the
// interpreter against the graph when it runs.
inline void add_feed(const graph& g, const std::string& name, const graph_tensor& value, feed_set& out) {
  if (check_feed_name(g, name, out)) {
    out.inputs.emplace(name, value);
  } else {
    params::entry e{value.type, {value.extents.begin(), value.extents.end()}, aligned_buffer<unsigned char>(value.bytes.size())};
    if (!value.bytes.empty()) std::memcpy(e.bytes.data(), value.bytes.data(), value.bytes.size());
    out.parameters.set_entry(name, std::move(e));
  }
}

// The whole of one --feed option: parse, check the name, read the .npy file (a regular file of at
// most npy_file_max_bytes), add. Errors about the file name the option and the file.
inline void add_feed_option(const graph& g, std::string_view spec_text, feed_set& out) {
  const feed_spec spec = parse_feed_spec(spec_text);
  check_feed_name(g, spec.name, out);
  graph_tensor value;
  try {
    value = load_npy(spec.path);
  } catch (const error& e) {
    throw error("--feed " + detail::excerpt(spec.name, 200) + ": " + e.what());
  }
  add_feed(g, spec.name, value, out);
}

}  // namespace symflow::cli
