#pragma once
// The in-memory headers a generated kernel includes besides the prelude: core/config.hpp, each op's
// own file, and the op files those include outside their host-only part. An op built on a base it
// shares with another op (ceil and round on floor.hpp's rounding_op) includes that op's file in
// scalar-only mode too. NVRTC looks a quoted include up by its exact name, not relative to the
// including header, so such a file is registered under the name the op file spells ("floor.hpp")
// as well as under its path from the include directory.
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <symflow/io/files.hpp>

#include "compiler.hpp"

namespace symflow::cuda::nvrtc_detail {

// The file names of the quoted includes in `text` that a compiler sees with SYMFLOW_SCALAR_ONLY
// defined: those outside every `#ifndef SYMFLOW_SCALAR_ONLY` block (and inside the `#else` of one).
inline std::vector<std::string> scalar_only_includes(const std::string& text) {
  std::vector<std::string> names;
  std::vector<bool> host_only;  // per open #if: whether its current branch is skipped in scalar-only mode
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] != '#') continue;
    std::string directive = line.substr(start + 1);
    directive.erase(0, directive.find_first_not_of(" \t"));
    auto starts = [&](const char* word) { return directive.rfind(word, 0) == 0; };
    if (starts("if")) {
      host_only.push_back(starts("ifndef") && directive.find("SYMFLOW_SCALAR_ONLY") != std::string::npos);
    } else if (starts("else") && !host_only.empty()) {
      host_only.back() = false;
    } else if (starts("endif") && !host_only.empty()) {
      host_only.pop_back();
    } else if (starts("include") && std::none_of(host_only.begin(), host_only.end(), [](bool b) { return b; })) {
      const auto open = directive.find('"');
      const auto close = open == std::string::npos ? open : directive.find('"', open + 1);
      if (close != std::string::npos) names.push_back(directive.substr(open + 1, close - open - 1));
    }
  }
  return names;
}

// (name, text) of every header the kernel's source includes: config.hpp, then `op_files` (paths
// such as "symflow/ops/mul.hpp"), then the op files they include in scalar-only mode, transitively.
inline std::vector<std::pair<std::string, std::string>> op_headers(const std::filesystem::path& include_dir,
                                                                   const std::vector<std::string>& op_files) {
  std::vector<std::pair<std::string, std::string>> headers;
  auto has = [&](const std::string& name) {
    return std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; });
  };
  auto read = [&](const std::string& relative) {
    const auto path = include_dir / relative;
    std::string text = read_file_or_empty(path);
    if (text.empty())
      throw nvrtc_error("graph_runner: cannot read " + path.string() +
                        " (symflow's headers: set nvrtc_options::include_dir or SYMFLOW_INCLUDE_DIR)");
    return text;
  };
  headers.emplace_back("symflow/core/config.hpp", read("symflow/core/config.hpp"));
  for (const auto& f : op_files)
    if (!has(f)) headers.emplace_back(f, read(f));
  // Each op file's scalar-only includes of sibling op files (a name with no directory part; config.hpp
  // is reached as "../core/config.hpp" and supplied above). Bounded: each file is added once.
  for (std::size_t i = 1; i < headers.size(); ++i) {
    for (const std::string& name : scalar_only_includes(headers[i].second)) {
      if (name.find('/') != std::string::npos || has(name)) continue;
      const std::string path = "symflow/ops/" + name;
      std::string text = read(path);
      if (!has(path)) headers.emplace_back(path, text);
      headers.emplace_back(name, std::move(text));
    }
  }
  return headers;
}

}  // namespace symflow::cuda::nvrtc_detail
