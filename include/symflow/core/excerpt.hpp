#pragma once
// Excerpts of untrusted text for error messages: a hostile file can hold a 60 KB key or a value
// spanning lines, and a message must stay one short line whatever the input.
#include <cstddef>
#include <string>
#include <string_view>

namespace symflow::detail {

// At most max_bytes of s for a message, cut at a UTF-8 character boundary, control characters
// escaped, with "..." and the full length when cut.
inline std::string excerpt(std::string_view s, std::size_t max_bytes = 64) {
  std::string out;
  std::size_t i = 0;
  for (; i < s.size() && out.size() < max_bytes; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      static constexpr char hex[] = "0123456789ABCDEF";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (i < s.size()) {
    // Do not end inside a multi-byte character: drop an incomplete last one.
    std::size_t start = out.size();
    while (start > 0 && (static_cast<unsigned char>(out[start - 1]) & 0xC0) == 0x80) --start;
    if (start > 0) {
      const auto lead = static_cast<unsigned char>(out[start - 1]);
      const std::size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      if (out.size() - (start - 1) < need) out.resize(start - 1);
    }
    out += "... (" + std::to_string(s.size()) + " bytes)";
  }
  return out;
}

}  // namespace symflow::detail
