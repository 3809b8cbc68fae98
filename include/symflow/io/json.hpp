#pragma once
// The JSON form of a graph value: human-readable, versioned ("format": "symflow.graph",
// "version": 1), keys in a fixed order, one entry per line. Needs nlohmann-json 3 (Debian:
// nlohmann-json3-dev; CMake: find_package(nlohmann_json 3 REQUIRED), link nlohmann_json::nlohmann_json).
//
// Floating-point numbers are written with enough digits to read back exactly (float elements as the
// double of equal value); NaN and infinities as the strings "nan", "inf", "-inf".
//
// json_writer.hpp writes, json_reader.hpp reads, json_format.hpp holds what both share; this header
// adds the file forms and is the one to include.
#include <string>
#include <string_view>

#include "binary.hpp"
#include "json_reader.hpp"
#include "json_writer.hpp"

namespace symflow {

inline void save_graph_json_file(const std::string& path, const graph& g, graph_save_options options = {}) {
  const std::string text = save_graph_json(g, options);
  write_file_bytes(path, text.data(), text.size());
}
// Errors name the file: "graph file 'PATH': graph JSON: ...".
inline graph load_graph_json_file(const std::string& path) {
  const auto bytes = read_file_bytes(path);
  try {
    return load_graph_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } catch (const graph_error& e) {
    throw graph_error("graph file '" + detail::printable_path(path) + "': " + e.what());
  }
}

}  // namespace symflow
