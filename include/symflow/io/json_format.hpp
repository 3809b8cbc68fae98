#pragma once
// What the graph JSON writer and reader share (the format: json.hpp, the header to include): the
// format's name and version, the JSON type, and JSON pointers for messages.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace symflow {

inline constexpr std::string_view graph_json_format = "symflow.graph";
inline constexpr int graph_json_version = 1;

namespace detail {
using ojson = nlohmann::ordered_json;

// A key as one reference token of a JSON pointer (RFC 6901): "~" and "/" escaped.
inline std::string json_pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

}  // namespace detail
}  // namespace symflow
