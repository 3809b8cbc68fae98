#pragma once
// The `symflow run` tool's feed handling, in a header of its own so that the fuzz target
// fuzz/fuzz_cli_feed.cpp runs exactly what the tool runs: parsing "--feed NAME=PATH.npy", checking
// NAME against the graph, and turning the array read from PATH into an interpreter feed or a
// parameter value. Every refusal is a symflow::error (usage_error for a bad command line).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

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

// A feed of another dtype of the same kind as its leaf's, converted to the leaf's dtype (as
// TensorFlow converts a NumPy array to its placeholder's dtype): NumPy writes int64 and float64
// unless told otherwise. Integers convert exactly, and a value that does not fit is refused;
// floating values round to nearest (to f16 and bf16 through f32), and a finite value beyond the
// range is refused. Across kinds (floats for integer labels) and to or from bool nothing is
// converted: the interpreter then refuses the feed, naming both types.
inline graph_tensor converted_feed(const graph_tensor& value, dtype to, const std::string& name) {
  const bool from_float = is_floating_dtype(value.type), to_float = is_floating_dtype(to);
  if (value.type == to || from_float != to_float || value.type == dtype::boolean || to == dtype::boolean)
    return value;
  const std::size_t n = value.bytes.size() / std::max<std::size_t>(1, dtype_size(value.type));
  std::vector<long double> wide(n);  // 64 significant bits on x86-64: every int64 and uint64 exactly
  visit_dtype(value.type, [&](auto s) {
    using S = decltype(s);
    for (std::size_t i = 0; i < n; ++i) {
      S x;
      std::memcpy(&x, value.bytes.data() + i * sizeof(S), sizeof(S));
      if constexpr (is_floating_dtype_v<S>) wide[i] = static_cast<long double>(static_cast<double>(x));
      else wide[i] = static_cast<long double>(x);
    }
  });
  graph_tensor out;
  out.type = to;
  out.extents = value.extents;
  out.bytes.resize(n * dtype_size(to));
  visit_dtype(to, [&](auto d) {
    using D = decltype(d);
    for (std::size_t i = 0; i < n; ++i) {
      const long double v = wide[i];
      D y;
      if constexpr (is_floating_dtype_v<D>) {
        if constexpr (std::is_same_v<D, double>) y = double(v);
        else if constexpr (std::is_same_v<D, float>) y = float(v);
        else y = D(float(v));
        const double back = double(y);
        if (std::isfinite(double(v)) && !std::isfinite(back)) {
          char shown[32];
          std::snprintf(shown, sizeof shown, "%.9g", double(v));
          throw value_error("--feed " + detail::excerpt(name, 200) + ": element " + std::to_string(i) + " (" + shown +
                            ") is outside the range of " + std::string(dtype_name(to)));
        }
      } else {
        if (v < static_cast<long double>(std::numeric_limits<D>::lowest()) ||
            v > static_cast<long double>(std::numeric_limits<D>::max()))
          throw value_error("--feed " + detail::excerpt(name, 200) + ": element " + std::to_string(i) + " (" +
                            std::to_string(static_cast<long long>(v)) + ") does not fit in " + std::string(dtype_name(to)) +
                            ", the graph's dtype");
        y = static_cast<D>(v);
      }
      std::memcpy(out.bytes.data() + i * sizeof(D), &y, sizeof(D));
    }
  });
  return out;
}

// The dtype of the graph's leaf `name` (an input or parameter).
inline dtype leaf_dtype(const graph& g, const std::string& name) {
  for (const auto* leaves : {&g.inputs, &g.parameters})
    for (const graph_leaf& l : *leaves)
      if (l.name == name) return l.type.type;
  throw usage_error("run: the graph has no input or parameter named '" + detail::excerpt(name, 200) + "'");
}

// Adds the array `value` under `name` (checked first), converted to the leaf's dtype where it is of
// the same kind (converted_feed). Dtype and shape are checked by the interpreter against the graph
// when it runs.
inline void add_feed(const graph& g, const std::string& name, const graph_tensor& given, feed_set& out) {
  const bool is_input = check_feed_name(g, name, out);
  const graph_tensor value = converted_feed(given, leaf_dtype(g, name), name);
  if (is_input) {
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
