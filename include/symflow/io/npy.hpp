#pragma once
// NumPy .npy files (format versions 1.0, 2.0 and 3.0 read; 1.0 written): float32, float64, int32,
// int64 and bool arrays in C order, little-endian. The reader refuses anything else — a wrong magic,
// a malformed or oversized header, Fortran order, big-endian or other dtypes, a shape whose element
// count overflows, data shorter or longer than the shape — with an npy_error naming the problem
// and its byte offset, and allocates nothing before the file is known to hold the data.
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "binary.hpp"
#include "../ir/graph.hpp"

namespace symflow {

class npy_error : public graph_error {
 public:
  using graph_error::graph_error;
};

namespace detail {
[[noreturn]] inline void npy_fail(const std::string& what, std::size_t at) {
  throw npy_error("npy: " + what + " (at byte " + std::to_string(at) + ")");
}

// The dtype's row's `npy_descr` column (core/dtype.hpp); "" for a value that is no dtype.
inline std::string_view npy_descr(dtype d) {
  const dtype_info* row = find_dtype_info(d);
  return row ? row->npy_descr : std::string_view();
}

// The header's Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class npy_header_parser {
 public:
  npy_header_parser(std::string_view text, std::size_t base) : s_(text), base_(base) {}

  void parse(dtype& type, std::vector<std::int64_t>& extents) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip();
    expect('{');
    for (;;) {
      skip();
      if (peek() == '}') {
        ++i_;
        break;
      }
      const std::string key = quoted();
      skip();
      expect(':');
      skip();
      if (key == "descr") {
        if (have_descr) fail("key 'descr' appears twice");
        have_descr = true;
        const std::string d = quoted();
        bool found = false;
        for (const dtype_info& c : dtype_infos) {
          const std::string_view want = c.npy_descr;
          if (want.empty()) continue;  // a dtype NumPy has not (bf16)
          // '=' (native) and '|' (not applicable) also describe little-endian data on the hosts symflow
          // supports; a single-byte type ('|') may also be written '<'.
          if (d.size() == 3 && d.substr(1) == want.substr(1) &&
              (d[0] == want[0] || d[0] == '=' || (want[0] == '|' && d[0] == '<'))) {
            type = c.type;
            found = true;
          }
        }
        if (!found) {
          if (!d.empty() && d[0] == '>') fail("big-endian data ('" + excerpt(d) + "') is not supported");
          fail("unsupported dtype '" + excerpt(d) + "' (float32, float64, int32, int64 and bool are)");
        }
      } else if (key == "fortran_order") {
        if (have_order) fail("key 'fortran_order' appears twice");
        have_order = true;
        if (s_.substr(i_, 5) == "False") i_ += 5;
        else if (s_.substr(i_, 4) == "True") fail("Fortran-order arrays are not supported (C order only)");
        else fail("'fortran_order' must be True or False");
      } else if (key == "shape") {
        if (have_shape) fail("key 'shape' appears twice");
        have_shape = true;
        extents = tuple();
      } else {
        fail("unknown header key '" + excerpt(key) + "'");
      }
      skip();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip();
      if (peek() != '}') fail("expected ',' or '}' in the header");
    }
    skip();
    if (i_ != s_.size()) fail("unexpected text after the header dictionary");
    if (!have_descr || !have_order || !have_shape) fail("the header lacks 'descr', 'fortran_order' or 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { npy_fail("malformed header: " + what, base_ + i_); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const std::size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) fail("unterminated string");
    return std::string(s_.substr(start, i_++ - start));
  }
  std::vector<std::int64_t> tuple() {
    expect('(');
    std::vector<std::int64_t> out;
    bool comma_after_last = false;
    for (;;) {
      skip();
      if (peek() == ')') {
        // Python reads "(3)" as the integer 3, and NumPy refuses it as a shape.
        if (out.size() == 1 && !comma_after_last) fail("a one-axis shape is written (n,), not (n)");
        ++i_;
        return out;
      }
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer extent");
      std::uint64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        v = v * 10 + std::uint64_t(peek() - '0');
        if (v > graph_max_elements) fail("shape overflow: an extent exceeds 2^56");
        ++i_;
      }
      if (out.size() == graph_max_rank) fail("more than " + std::to_string(graph_max_rank) + " axes");
      out.push_back(static_cast<std::int64_t>(v));
      skip();
      comma_after_last = peek() == ',';
      if (comma_after_last) ++i_;
      else if (peek() != ')') fail("expected ',' or ')' in the shape");
    }
  }
  std::string_view s_;
  std::size_t base_, i_ = 0;
};
}  // namespace detail

// Parses a whole .npy file.
inline graph_tensor read_npy(const unsigned char* data, std::size_t size) {
  using detail::npy_fail;
  static constexpr unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 6 || std::memcmp(data, magic, 6) != 0) npy_fail("wrong magic (not a .npy file)", 0);
  if (size < 10) npy_fail("truncated header", size);
  const unsigned major = data[6], minor = data[7];
  std::size_t header_len = 0, start = 0;
  // NumPy itself reads only x.0: a minor version would announce a layout this reader does not know.
  if (minor != 0) {
    npy_fail("unsupported format version " + std::to_string(major) + "." + std::to_string(minor), 7);
  } else if (major == 1) {
    header_len = std::size_t(data[8]) | (std::size_t(data[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) npy_fail("truncated header", size);
    header_len = std::size_t(data[8]) | (std::size_t(data[9]) << 8) | (std::size_t(data[10]) << 16) |
                 (std::size_t(data[11]) << 24);
    start = 12;
  } else {
    npy_fail("unsupported format version " + std::to_string(major) + ".0", 6);
  }
  if (header_len > size - start)
    npy_fail("truncated: the header is " + std::to_string(header_len) + " bytes, the file has " +
                 std::to_string(size - start) + " after the preamble",
             start);
  graph_tensor t;
  detail::npy_header_parser(std::string_view(reinterpret_cast<const char*>(data + start), header_len), start)
      .parse(t.type, t.extents);
  std::uint64_t n = 1;
  bool zero = false;
  for (auto e : t.extents) {
    if (e == 0) zero = true;
    else if (n > graph_max_elements / std::uint64_t(e)) npy_fail("shape overflow: " + graph_shape_string(t.extents), start);
    else n *= std::uint64_t(e);
  }
  if (zero) n = 0;
  const std::size_t offset = start + header_len;
  const std::uint64_t want = n * dtype_size(t.type);
  if (want != size - offset)
    npy_fail(std::string(want > size - offset ? "truncated" : "trailing bytes") + ": shape " +
                 graph_shape_string(t.extents) + " of " + std::string(dtype_name(t.type)) + " needs " +
                 std::to_string(want) + " data bytes, the file has " + std::to_string(size - offset),
             offset);
  t.bytes.assign(data + offset, data + size);
  if (t.type == dtype::boolean)
    for (std::size_t i = 0; i < t.bytes.size(); ++i)
      if (t.bytes[i] > 1) npy_fail("bool element " + std::to_string(i) + " is neither 0 nor 1", offset + i);
  return t;
}
inline graph_tensor read_npy(const std::vector<unsigned char>& bytes) { return read_npy(bytes.data(), bytes.size()); }

// A .npy file (version 1.0, header padded to a multiple of 64 bytes as NumPy writes it).
inline std::vector<unsigned char> write_npy(const graph_tensor& t) {
  if (detail::npy_descr(t.type).empty())
    throw npy_error("npy: NumPy has no dtype for " + std::string(dtype_name(t.type)) +
                    " values; write them as safetensors, or convert them to f32 first");
  std::string header = "{'descr': '" + std::string(detail::npy_descr(t.type)) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < t.extents.size(); ++i) {
    header += std::to_string(t.extents[i]);
    if (t.extents.size() == 1 || i + 1 < t.extents.size()) header += ",";
    if (i + 1 < t.extents.size()) header += " ";
  }
  header += "), }";
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::vector<unsigned char> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.push_back(static_cast<unsigned char>(header.size() & 0xFF));
  out.push_back(static_cast<unsigned char>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

template <class T, class S>
std::vector<unsigned char> write_npy(const tensor<T, S>& t) {
  return write_npy(to_graph_tensor(t));
}

template <class T, shape_spec S>
tensor<T, S> read_npy_as(const std::vector<unsigned char>& bytes) {
  return from_graph_tensor<T, S>(read_npy(bytes));
}

// A .npy file: a regular file of at most npy_file_max_bytes (4 GiB); errors name it.
inline graph_tensor load_npy(const std::string& path, std::uint64_t max_bytes = npy_file_max_bytes) {
  const auto bytes = read_file_bytes(path, max_bytes, "npy file");
  try {
    return read_npy(bytes);
  } catch (const npy_error& e) {
    throw npy_error("npy file '" + detail::printable_path(path) + "': " + e.what());
  }
}
inline void save_npy(const std::string& path, const graph_tensor& t) {
  const auto bytes = write_npy(t);
  write_file_bytes(path, bytes.data(), bytes.size());
}
template <class T, class S>
void save_npy(const std::string& path, const tensor<T, S>& t) {
  save_npy(path, to_graph_tensor(t));
}
template <class T, shape_spec S>
tensor<T, S> load_npy_as(const std::string& path) {
  return from_graph_tensor<T, S>(load_npy(path));
}

}  // namespace symflow
