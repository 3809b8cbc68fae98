#pragma once
// The JSON form of a graph value: human-readable, versioned ("format": "symflow.graph",
// "version": 1), keys in a fixed order, one entry per line. Needs nlohmann-json 3 (Debian:
// nlohmann-json3-dev; CMake: find_package(nlohmann_json 3 REQUIRED), link nlohmann_json::nlohmann_json).
//
// Floating-point numbers are written with enough digits to read back exactly (float elements as the
// double of equal value); NaN and infinities as the strings "nan", "inf", "-inf".
//
// json_writer.hpp writes, json_reader.hpp reads, json_format.hpp holds what both share,
// json_impl.hpp defines the functions below; this header is the one to include.
#include <string>
#include <string_view>

#include "../core/separate_compilation.hpp"
#include "../ir/graph.hpp"
#include "binary.hpp"

namespace symflow {

// The graph as JSON text (deterministic: save(load(save(g))) == save(g)). Strings must be UTF-8
// (the loaders guarantee it); a graph built by hand with other bytes in a name is refused.
SYMFLOW_LIBRARY_LINKAGE std::string save_graph_json(const graph& g, graph_save_options options = {});
// The graph in `text`, validated; a graph_error naming the JSON pointer of what it refuses.
SYMFLOW_LIBRARY_LINKAGE graph load_graph_json(std::string_view text);

SYMFLOW_LIBRARY_LINKAGE void save_graph_json_file(const std::string& path, const graph& g,
                                                  graph_save_options options = {});
// Errors name the file: "graph file 'PATH': graph JSON: ...".
SYMFLOW_LIBRARY_LINKAGE graph load_graph_json_file(const std::string& path);

}  // namespace symflow

// The definitions, with the JSON parser behind them: compiled once per program with the training
// files under SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp), where a unit that
// saves or loads graphs then needs neither nlohmann-json's header nor its code.
#if !SYMFLOW_LIBRARY_DECLARED_ONLY
#include "json_impl.hpp"
#endif
