#pragma once
// Text for character-level language models: the fortunes of Debian's `fortunes` package as one
// string, and a fixed character vocabulary (printable ASCII, newline, tab and one id for every
// other byte) whose size is a compile-time constant, as embedding and output layers need.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "../core/error.hpp"

namespace symflow {

inline constexpr std::string_view fortunes_directory = "/usr/share/games/fortunes";

// The fortunes of every file in dir that has no extension (the .dat files are indexes, the .u8 ones
// links), in file-name order, each fortune followed by a blank line instead of its '%' separator.
// Stops after limit bytes. Throws value_error when dir holds no fortune file.
inline std::string read_fortunes(const std::string& dir = std::string(fortunes_directory),
                                 std::size_t limit = std::size_t(-1)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw value_error("read_fortunes: '" + dir + "' is not a directory (install Debian's fortunes package)");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec) && !entry.path().has_extension()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw value_error("read_fortunes: no fortune file in '" + dir + "'");
  std::string text;
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::string line;
    while (text.size() < limit && std::getline(in, line)) {
      if (line == "%") text += '\n';
      else text += line + '\n';
    }
  }
  if (text.size() > limit) text.resize(limit);
  return text;
}

// Ids 0..94 are the printable ASCII characters ' '..'~', 95 is '\n', 96 is '\t' and 97 stands for
// every other byte (decoded as '?').
struct ascii_vocabulary {
  static constexpr std::size_t size = 98;
  static constexpr std::int32_t newline = 95, tab = 96, other = 97;

  static constexpr std::int32_t id(unsigned char c) {
    if (c >= 32 && c <= 126) return std::int32_t(c - 32);
    if (c == '\n') return newline;
    if (c == '\t') return tab;
    return other;
  }
  static constexpr char character(std::int32_t id) {
    if (id >= 0 && id < 95) return char(id + 32);
    if (id == newline) return '\n';
    if (id == tab) return '\t';
    return '?';
  }
  static std::vector<std::int32_t> encode(std::string_view text) {
    std::vector<std::int32_t> ids(text.size());
    std::transform(text.begin(), text.end(), ids.begin(), [](char c) { return id(static_cast<unsigned char>(c)); });
    return ids;
  }
};

// The cross-entropy, in bits per character, of `text` under the character frequencies of `training`
// (add-one smoothed): what a model that ignores context achieves, the baseline a language model
// must beat.
inline double unigram_bits_per_character(const std::vector<std::int32_t>& training, const std::vector<std::int32_t>& text) {
  std::array<double, ascii_vocabulary::size> count{};
  for (std::int32_t id : training) count[std::size_t(id)] += 1;
  const double total = double(training.size()) + double(ascii_vocabulary::size);
  double bits = 0;
  for (std::int32_t id : text) bits -= std::log2((count[std::size_t(id)] + 1) / total);
  return text.empty() ? 0.0 : bits / double(text.size());
}

}  // namespace symflow
