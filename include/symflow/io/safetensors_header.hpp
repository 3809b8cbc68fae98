#pragma once
// Reading a safetensors header (see checkpoint.hpp for the format): the 8-byte little-endian
// length, a JSON header of at most 100 MB nested at most 3 deep (checked before parsing, since a
// value nested 10^5 deep overflows the stack of whatever walks it), a flat object of tensors
// {dtype, shape, data_offsets} plus an optional "__metadata__" string -> string map, offsets in
// range, without overlap or gap, covering the data section exactly, sizes matching dtype x shape
// without overflow. Messages name the source, the field and the limit, and quote at most short
// excerpts of what the file holds.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/excerpt.hpp"
#include "../core/json_limits.hpp"
#include "checkpoint_error.hpp"

namespace symflow {
namespace detail {

[[noreturn]] inline void checkpoint_fail(const std::string& source, const std::string& what) {
  throw checkpoint_error("checkpoint '" + excerpt(source, 200) + "': " + what);
}
// The same, for a failed system call: errno's text follows.
[[noreturn]] inline void checkpoint_system_fail(const std::string& source, const std::string& what, int error_number) {
  checkpoint_fail(source, what + ": " + std::strerror(error_number));
}

// The dtype's row's `safetensors` column (core/dtype.hpp); "?" for a value that is no dtype.
inline std::string_view safetensors_dtype_name(dtype d) {
  const dtype_info* row = find_dtype_info(d);
  return row ? row->safetensors : "?";
}

// "F32, F64, ..., U32 and U64": the safetensors dtypes the reader knows (the table's rows).
inline std::string known_safetensors_dtypes() {
  std::string out;
  for (std::size_t i = 0; i < dtype_count; ++i)
    out += (i == 0 ? "" : i + 1 == dtype_count ? " and " : ", ") + std::string(dtype_infos[i].safetensors);
  return out;
}

// A tensor as the header describes it, validated against the data section.
struct safetensors_entry {
  std::string name;
  std::string file_dtype;     // as written: "F32", ..., "U64"
  std::size_t file_element_size = 0;
  dtype type{};               // as held in memory
  std::vector<std::size_t> extents;
  std::uint64_t begin = 0, end = 0;
};

struct safetensors_header {
  std::vector<safetensors_entry> entries;  // in header order
  checkpoint_metadata metadata;
};

class safetensors_header_reader {
 public:
  safetensors_header_reader(std::string source, std::uint64_t data_bytes)
      : source_(std::move(source)), data_bytes_(data_bytes) {}

  safetensors_header read(std::string_view text) {
    if (text.empty() || text.front() != '{')
      fail("the header does not start with '{' (found " + (text.empty() ? std::string("nothing") : quote_byte(text.front())) + ")");
    // Before the parser: a value nested 10^5 deep would overflow the stack of whatever walks it.
    if (const auto scan = scan_json_depth(text, checkpoint_max_header_depth); scan.exceeded)
      fail("header field at byte " + std::to_string(8 + scan.offset) + " nests deeper than the limit of " +
           std::to_string(checkpoint_max_header_depth) + " levels (a flat object of tensors)");
    using json = nlohmann::ordered_json;
    // The parser keeps the last of repeated keys silently; this watches every object for them.
    std::vector<std::set<std::string>> open_objects;
    std::string duplicate;
    json::parser_callback_t watch = [&](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) open_objects.emplace_back();
      else if (event == json::parse_event_t::object_end) open_objects.pop_back();
      else if (event == json::parse_event_t::key && duplicate.empty() && !open_objects.empty() &&
               !open_objects.back().insert(parsed.get<std::string>()).second)
        duplicate = depth == 1 ? "the tensor name '" + excerpt(parsed.get<std::string>()) + "' appears twice"
                               : "the key '" + excerpt(parsed.get<std::string>()) + "' appears twice in one object";
      return true;
    };
    json header;
    try {
      header = json::parse(text.begin(), text.end(), watch);
    } catch (const nlohmann::json::exception& e) {
      fail(std::string("the header is not valid JSON: ") + excerpt(e.what(), 300));
    }
    if (!duplicate.empty()) fail(duplicate);
    if (!header.is_object()) fail("the header is not a JSON object");

    safetensors_header out;
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") read_metadata(value, out.metadata);
      else out.entries.push_back(read_entry(name, value));
    }
    check_layout(out.entries);
    return out;
  }

  [[noreturn]] void fail(const std::string& what) const { checkpoint_fail(source_, what); }

 private:
  using json = nlohmann::ordered_json;

  static std::string quote_byte(char c) {
    char text[8];
    std::snprintf(text, sizeof text, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(c)));
    return text;
  }

  // A value as messages quote it: at most 64 bytes of its JSON text.
  static std::string brief(const json& v) { return excerpt(v.dump(), 64); }

  void read_metadata(const json& value, checkpoint_metadata& metadata) const {
    if (!value.is_object()) fail("'__metadata__' is not an object of strings");
    for (const auto& [key, v] : value.items()) {
      if (!v.is_string()) fail("'__metadata__' entry '" + excerpt(key) + "' is not a string (found " + brief(v) + ")");
      metadata.emplace(key, v.get<std::string>());
    }
  }

  safetensors_entry read_entry(const std::string& name, const json& value) const {
    const std::string who = "tensor '" + excerpt(name) + "'";
    if (name.empty()) fail("a tensor has an empty name");
    if (!value.is_object()) fail(who + " is not described by an object (found " + brief(value) + ")");
    for (const auto& [key, v] : value.items())
      if (key != "dtype" && key != "shape" && key != "data_offsets") fail(who + " has an unknown key '" + excerpt(key) + "'");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!value.contains(key)) fail(who + " lacks '" + key + "'");

    safetensors_entry e;
    e.name = name;
    const json& d = value.at("dtype");
    if (!d.is_string()) fail(who + ": 'dtype' is not a string (found " + brief(d) + ")");
    e.file_dtype = d.get<std::string>();
    if (const auto t = find_dtype(&dtype_info::safetensors, e.file_dtype)) {
      e.type = *t;
      e.file_element_size = dtype_size(*t);
    } else {
      fail(who + " has unknown dtype '" + excerpt(e.file_dtype) + "' (" + known_safetensors_dtypes() + " are read)");
    }

    const json& s = value.at("shape");
    if (!s.is_array()) fail(who + ": 'shape' is not an array (found " + brief(s) + ")");
    if (s.size() > checkpoint_max_rank)
      fail(who + ": 'shape' has " + std::to_string(s.size()) + " axes (limit " + std::to_string(checkpoint_max_rank) + ")");
    std::uint64_t count = 1;
    bool overflow = false;
    for (const json& x : s) {
      if (!x.is_number_unsigned()) fail(who + ": 'shape' holds " + brief(x) + ", not a non-negative integer");
      const std::uint64_t extent = x.get<std::uint64_t>();
      if (extent > std::numeric_limits<std::size_t>::max()) overflow = true;
      e.extents.push_back(static_cast<std::size_t>(extent));
      if (extent != 0 && count > std::numeric_limits<std::uint64_t>::max() / e.file_element_size / extent) overflow = true;
      else count *= extent;
    }
    const bool empty = std::find(e.extents.begin(), e.extents.end(), std::size_t(0)) != e.extents.end();
    if (overflow && !empty) fail(who + ": the element count of shape " + brief(s) + " overflows 64 bits");
    const std::uint64_t bytes = empty ? 0 : count * e.file_element_size;

    const json& o = value.at("data_offsets");
    if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
      fail(who + ": 'data_offsets' is not a pair of non-negative integers (found " + brief(o) + ")");
    e.begin = o[0].get<std::uint64_t>();
    e.end = o[1].get<std::uint64_t>();
    if (e.begin > e.end) fail(who + ": data_offsets " + brief(o) + " run backwards");
    if (e.end > data_bytes_)
      fail(who + ": data_offsets " + brief(o) + " lie outside the " + std::to_string(data_bytes_) + "-byte data section");
    if (e.end - e.begin != bytes)
      fail(who + ": data_offsets " + brief(o) + " span " + std::to_string(e.end - e.begin) + " bytes, but " + e.file_dtype +
           " " + brief(s) + " needs " + std::to_string(bytes));
    return e;
  }

  // Tensors must tile the data section: starting at 0, each where the previous ends, the last at its end.
  void check_layout(const std::vector<safetensors_entry>& entries) const {
    std::vector<const safetensors_entry*> by_offset;
    for (const auto& e : entries) by_offset.push_back(&e);
    std::stable_sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
      return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    std::uint64_t covered = 0;
    const safetensors_entry* previous = nullptr;
    for (const auto* e : by_offset) {
      if (e->begin < covered)
        fail("tensors '" + excerpt(previous->name) + "' " + range(*previous) + " and '" + excerpt(e->name) + "' " + range(*e) + " overlap");
      if (e->begin > covered)
        fail("bytes [" + std::to_string(covered) + ", " + std::to_string(e->begin) + ") of the data section belong to no tensor" +
             (previous ? " (a gap after '" + excerpt(previous->name) + "')" : std::string(" (a gap at the start)")));
      covered = e->end;
      previous = e;
    }
    if (covered != data_bytes_)
      fail("the data section has " + std::to_string(data_bytes_) + " bytes but the tensors end at byte " +
           std::to_string(covered) + " (trailing bytes)");
  }

  static std::string range(const safetensors_entry& e) {
    std::string out = "[";  // appended piecewise: GCC 12 warns (-Wrestrict) about "[" + std::string
    out += std::to_string(e.begin);
    out += ", ";
    out += std::to_string(e.end);
    return out + ")";
  }

  std::string source_;
  std::uint64_t data_bytes_;
};

inline std::uint64_t read_u64_le(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Splits a file or buffer of `size` bytes into its header text and data section, checking the
// length field first; read_header is called with the header length once that is known to fit.
template <class ReadHeader>
safetensors_header parse_safetensors_prefix(const std::string& source, std::uint64_t size, const unsigned char* length_field,
                                            ReadHeader&& read_header, std::uint64_t& data_offset) {
  if (size < 8)
    checkpoint_fail(source, "the file has " + std::to_string(size) + " bytes, fewer than the 8-byte header length (not a safetensors file)");
  const std::uint64_t header_bytes = read_u64_le(length_field);
  if (header_bytes > size - 8)
    checkpoint_fail(source, "the header length " + std::to_string(header_bytes) + " is larger than the " + std::to_string(size - 8) +
         " bytes after the length field (truncated or not a safetensors file)");
  if (header_bytes > checkpoint_max_header_bytes)
    checkpoint_fail(source, "the header length " + std::to_string(header_bytes) + " exceeds the limit of " +
         std::to_string(checkpoint_max_header_bytes) + " bytes");
  data_offset = 8 + header_bytes;
  const std::string text = read_header(static_cast<std::size_t>(header_bytes));
  return safetensors_header_reader(source, size - data_offset).read(text);
}

}  // namespace detail
}  // namespace symflow
