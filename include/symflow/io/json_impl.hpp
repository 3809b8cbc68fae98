#pragma once
// The JSON form's functions (json.hpp), included there unless they are compiled once per program
// with the training files (core/separate_compilation.hpp, training_definitions.hpp). Needs
// nlohmann-json 3.
#include <string>
#include <string_view>

#include "binary.hpp"
#include "json.hpp"
#include "json_reader.hpp"
#include "json_writer.hpp"

namespace symflow {

SYMFLOW_LIBRARY_LINKAGE std::string save_graph_json(const graph& g, graph_save_options options) {
  try {
    return detail::save_graph_json_unchecked(g, options);
  } catch (const detail::ojson::exception& e) {
    throw graph_error(std::string("graph JSON: cannot write the graph: ") + e.what());
  }
}

SYMFLOW_LIBRARY_LINKAGE graph load_graph_json(std::string_view text) {
  using detail::json_reader;
  using detail::ojson;
  ojson doc;
  try {
    doc = ojson::parse(text.begin(), text.end(), detail::json_structure_guard{});
  } catch (const ojson::exception& e) {
    // nlohmann quotes the last token read, which can be a whole long string: bounded.
    throw graph_error(std::string("graph JSON: malformed JSON: ") + detail::excerpt(e.what(), 300));
  }
  json_reader::only_keys(doc, "", {"format", "version", "inputs", "parameters", "constants", "nodes", "outputs"});
  const std::string format = json_reader::string(doc, "", "format");
  if (format != graph_json_format)
    json_reader::fail("/format", "\"" + detail::excerpt(format) + "\" is not \"" + std::string(graph_json_format) + "\"");
  const std::int64_t version = json_reader::integer(doc, "", "version", 0, std::numeric_limits<std::int64_t>::max());
  if (version != graph_json_version)
    json_reader::fail("/version", "unsupported version " + std::to_string(version) + " (this reader reads version " +
                                      std::to_string(graph_json_version) + ")");
  graph g = json_reader::graph_object(doc, "", 0);
  validate(g, "graph JSON");
  return g;
}

SYMFLOW_LIBRARY_LINKAGE void save_graph_json_file(const std::string& path, const graph& g, graph_save_options options) {
  const std::string text = save_graph_json(g, options);
  write_file_bytes(path, text.data(), text.size());
}

SYMFLOW_LIBRARY_LINKAGE graph load_graph_json_file(const std::string& path) {
  const auto bytes = read_file_bytes(path);
  try {
    return load_graph_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } catch (const graph_error& e) {
    throw graph_error("graph file '" + detail::printable_path(path) + "': " + e.what());
  }
}

}  // namespace symflow
