#pragma once
// Bounds on JSON text checked before a JSON library sees it. A JSON value nested 10^5 deep is
// 200 KB of "[[[[..." — small enough to pass any size limit — yet whatever walks it recursively
// (building, copying, dumping or destroying the parsed value) overflows the stack. Counting the
// open brackets outside strings first costs one pass and no allocation, and lets each format refuse
// anything deeper than its own layout needs.
#include <cstddef>
#include <string_view>

namespace symflow::detail {

struct json_depth_scan {
  std::size_t max_depth_seen = 0;  // deepest nesting of [ and { outside strings, up to the limit + 1
  std::size_t offset = 0;          // where the limit was first passed (meaningful when exceeded)
  bool exceeded = false;
};

// Scans text for [ and { outside strings (honouring backslash escapes) and stops at the first one
// that opens level max_depth + 1. The text need not be valid JSON: the parser judges the rest.
inline json_depth_scan scan_json_depth(std::string_view text, std::size_t max_depth) {
  json_depth_scan out;
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        out.max_depth_seen = depth;
        out.offset = i;
        out.exceeded = true;
        return out;
      }
      if (depth > out.max_depth_seen) out.max_depth_seen = depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return out;
}

}  // namespace symflow::detail
