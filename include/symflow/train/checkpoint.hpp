#pragma once
// Checkpoints: params stores (model parameters, optimiser state) and string metadata in the
// safetensors format, so other tools can read them:
//
//   u64 little-endian N | N bytes of JSON header | data section
//
// The header is a JSON object: for every tensor "name": {"data_offsets": [begin, end], "dtype": "F32",
// "shape": [2, 3]} with offsets relative to the data section, and optionally "__metadata__": an object
// of string values. symflow writes keys sorted, tensors in name order with no gaps, and pads the
// header with spaces so the data starts at a multiple of 8 bytes. Dtypes: F32 F64 I32 I64 BOOL, and
// U8 when reading (widened to i32, the narrowest integer dtype a tensor has).
//
// Saving is atomic: the file is written as PATH.tmp.<pid>, flushed and fsynced, renamed over PATH,
// and the directory is fsynced, so a crash leaves either the old checkpoint or the new one.
// Loading validates every field before allocating and names the first problem in a
// checkpoint_error; it never allocates more than the file's size justifies.
//
// Needs nlohmann-json 3 (Debian: nlohmann-json3-dev; CMake: find_package(nlohmann_json 3 REQUIRED),
// link nlohmann_json::nlohmann_json) and POSIX (fsync, rename).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
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
#include "../core/params.hpp"

namespace symflow {

static_assert(std::endian::native == std::endian::little,
              "symflow checkpoints copy tensor bytes as they are: safetensors data is little-endian");

// A checkpoint file could not be written, or a file read as one is malformed.
class checkpoint_error : public error {
 public:
  using error::error;
};

using checkpoint_metadata = std::map<std::string, std::string>;

// One params store saved under a name prefix: {"", model} and {"adam/", optimizer_state} give
// "W" and "adam/W".
struct checkpoint_part {
  std::string prefix;
  const params& store;
};

// What a checkpoint file holds.
struct checkpoint {
  params tensors;
  checkpoint_metadata metadata;

  // The tensors whose names start with prefix, under their names without it.
  params part(std::string_view prefix) const {
    params out;
    for (const std::string& name : tensors.names())
      if (name.size() >= prefix.size() && std::string_view(name).substr(0, prefix.size()) == prefix)
        out.set_entry(name.substr(prefix.size()), tensors.at(name));
    return out;
  }
};

// Bounds a hostile header before its allocation; safetensors' own reader uses the same limit.
inline constexpr std::uint64_t checkpoint_max_header_bytes = 100u << 20;

namespace detail {

[[noreturn]] inline void checkpoint_fail(const std::string& source, const std::string& what) {
  throw checkpoint_error("checkpoint '" + source + "': " + what);
}
// The same, for a failed system call: errno's text follows.
[[noreturn]] inline void checkpoint_system_fail(const std::string& source, const std::string& what, int error_number) {
  checkpoint_fail(source, what + ": " + std::strerror(error_number));
}

inline std::string_view safetensors_dtype_name(dtype d) {
  switch (d) {
    case dtype::f32: return "F32";
    case dtype::f64: return "F64";
    case dtype::i32: return "I32";
    case dtype::i64: return "I64";
    case dtype::boolean: return "BOOL";
  }
  return "?";
}

// A tensor as the header describes it, validated against the data section.
struct safetensors_entry {
  std::string name;
  std::string file_dtype;     // as written: "F32", ..., "U8"
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
    using json = nlohmann::ordered_json;
    // The parser keeps the last of repeated keys silently; this watches every object for them.
    std::vector<std::set<std::string>> open_objects;
    std::string duplicate;
    json::parser_callback_t watch = [&](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::object_start) open_objects.emplace_back();
      else if (event == json::parse_event_t::object_end) open_objects.pop_back();
      else if (event == json::parse_event_t::key && duplicate.empty() && !open_objects.empty() &&
               !open_objects.back().insert(parsed.get<std::string>()).second)
        duplicate = depth == 1 ? "the tensor name '" + parsed.get<std::string>() + "' appears twice"
                               : "the key '" + parsed.get<std::string>() + "' appears twice in one object";
      return true;
    };
    json header;
    try {
      header = json::parse(text.begin(), text.end(), watch);
    } catch (const nlohmann::json::exception& e) {
      fail(std::string("the header is not valid JSON: ") + e.what());
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

  void read_metadata(const json& value, checkpoint_metadata& metadata) const {
    if (!value.is_object()) fail("'__metadata__' is not an object of strings");
    for (const auto& [key, v] : value.items()) {
      if (!v.is_string()) fail("'__metadata__' entry '" + key + "' is not a string (found " + v.dump() + ")");
      metadata.emplace(key, v.get<std::string>());
    }
  }

  safetensors_entry read_entry(const std::string& name, const json& value) const {
    const std::string who = "tensor '" + name + "'";
    if (name.empty()) fail("a tensor has an empty name");
    if (!value.is_object()) fail(who + " is not described by an object (found " + value.dump() + ")");
    for (const auto& [key, v] : value.items())
      if (key != "dtype" && key != "shape" && key != "data_offsets") fail(who + " has an unknown key '" + key + "'");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!value.contains(key)) fail(who + " lacks '" + key + "'");

    safetensors_entry e;
    e.name = name;
    const json& d = value.at("dtype");
    if (!d.is_string()) fail(who + ": 'dtype' is not a string (found " + d.dump() + ")");
    e.file_dtype = d.get<std::string>();
    if (e.file_dtype == "U8") {
      e.type = dtype::i32;
      e.file_element_size = 1;
    } else {
      bool known = false;
      for (dtype t : {dtype::f32, dtype::f64, dtype::i32, dtype::i64, dtype::boolean})
        if (e.file_dtype == safetensors_dtype_name(t)) {
          e.type = t;
          e.file_element_size = dtype_size(t);
          known = true;
        }
      if (!known) fail(who + " has unknown dtype '" + e.file_dtype + "' (F32, F64, I32, I64, BOOL and U8 are read)");
    }

    const json& s = value.at("shape");
    if (!s.is_array()) fail(who + ": 'shape' is not an array (found " + s.dump() + ")");
    if (s.size() > 64) fail(who + ": 'shape' has " + std::to_string(s.size()) + " axes (at most 64)");
    std::uint64_t count = 1;
    bool overflow = false;
    for (const json& x : s) {
      if (!x.is_number_unsigned()) fail(who + ": 'shape' holds " + x.dump() + ", not a non-negative integer");
      const std::uint64_t extent = x.get<std::uint64_t>();
      if (extent > std::numeric_limits<std::size_t>::max()) overflow = true;
      e.extents.push_back(static_cast<std::size_t>(extent));
      if (extent != 0 && count > std::numeric_limits<std::uint64_t>::max() / e.file_element_size / extent) overflow = true;
      else count *= extent;
    }
    const bool empty = std::find(e.extents.begin(), e.extents.end(), std::size_t(0)) != e.extents.end();
    if (overflow && !empty) fail(who + ": the element count of shape " + s.dump() + " overflows 64 bits");
    const std::uint64_t bytes = empty ? 0 : count * e.file_element_size;

    const json& o = value.at("data_offsets");
    if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned())
      fail(who + ": 'data_offsets' is not a pair of non-negative integers (found " + o.dump() + ")");
    e.begin = o[0].get<std::uint64_t>();
    e.end = o[1].get<std::uint64_t>();
    if (e.begin > e.end) fail(who + ": data_offsets " + o.dump() + " run backwards");
    if (e.end > data_bytes_)
      fail(who + ": data_offsets " + o.dump() + " lie outside the " + std::to_string(data_bytes_) + "-byte data section");
    if (e.end - e.begin != bytes)
      fail(who + ": data_offsets " + o.dump() + " span " + std::to_string(e.end - e.begin) + " bytes, but " + e.file_dtype +
           " " + s.dump() + " needs " + std::to_string(bytes));
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
        fail("tensors '" + previous->name + "' " + range(*previous) + " and '" + e->name + "' " + range(*e) + " overlap");
      if (e->begin > covered)
        fail("bytes [" + std::to_string(covered) + ", " + std::to_string(e->begin) + ") of the data section belong to no tensor" +
             (previous ? " (a gap after '" + previous->name + "')" : std::string(" (a gap at the start)")));
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

// Fills a params entry from the file's bytes for e (already known to be e.end - e.begin long).
inline params::entry make_entry(const std::string& source, const safetensors_entry& e, const unsigned char* file_bytes) {
  const std::size_t count = e.file_element_size ? static_cast<std::size_t>((e.end - e.begin) / e.file_element_size) : 0;
  params::entry out{e.type, e.extents, aligned_buffer<unsigned char>(count * dtype_size(e.type))};
  if (e.file_dtype == "U8") {
    for (std::size_t i = 0; i < count; ++i) {
      const std::int32_t v = file_bytes[i];
      std::memcpy(out.bytes.data() + 4 * i, &v, 4);
    }
    return out;
  }
  if (count) std::memcpy(out.bytes.data(), file_bytes, count * dtype_size(e.type));
  if (e.type == dtype::boolean)
    for (std::size_t i = 0; i < count; ++i)
      if (file_bytes[i] > 1)
        checkpoint_fail(source, "tensor '" + e.name + "' is BOOL but element " + std::to_string(i) + " is " +
                                    std::to_string(file_bytes[i]) + ", not 0 or 1");
  return out;
}

// One named tensor to write, from whichever store holds it.
struct safetensors_item {
  std::string name;
  const params::entry* value;
};

inline std::vector<safetensors_item> collect_items(std::initializer_list<checkpoint_part> parts, const std::string& source) {
  std::map<std::string, const params::entry*> by_name;
  for (const checkpoint_part& p : parts)
    for (const std::string& name : p.store.names()) {
      const std::string full = p.prefix + name;
      if (full.empty()) checkpoint_fail(source, "a tensor has an empty name");
      if (full == "__metadata__") checkpoint_fail(source, "'__metadata__' is reserved, not a tensor name");
      if (!by_name.emplace(full, &p.store.at(name)).second) checkpoint_fail(source, "the name '" + full + "' comes from two parts");
    }
  std::vector<safetensors_item> out;
  for (const auto& [name, value] : by_name) out.push_back({name, value});
  return out;
}

// The header text, padded with spaces to a multiple of 8 bytes, for items in name order.
inline std::string safetensors_header_text(const std::vector<safetensors_item>& items, const checkpoint_metadata& metadata,
                                           const std::string& source) {
  nlohmann::json header = nlohmann::json::object();  // std::map underneath: keys come out sorted
  std::uint64_t offset = 0;
  for (const auto& item : items) {
    const std::uint64_t bytes = item.value->bytes.size();
    nlohmann::json& entry = header[item.name];
    entry["dtype"] = safetensors_dtype_name(item.value->type);
    entry["shape"] = item.value->extents;
    entry["data_offsets"] = std::vector<std::uint64_t>{offset, offset + bytes};
    offset += bytes;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    checkpoint_fail(source, std::string("a name or metadata string is not valid UTF-8: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

inline void append_u64_le(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// Writes a file so that PATH holds either its old contents or all of the new ones, never a part.
class atomic_file {
 public:
  explicit atomic_file(std::string path)
      : path_(std::move(path)), temporary_(path_ + ".tmp." + std::to_string(::getpid())) {
    file_ = std::fopen(temporary_.c_str(), "wb");
    if (!file_) fail(errno, "cannot create the temporary file '" + temporary_ + "'");
  }
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  ~atomic_file() {
    if (file_) std::fclose(file_);
    if (!committed_) std::remove(temporary_.c_str());
  }

  void write(const void* data, std::size_t size) {
    if (size && std::fwrite(data, 1, size, file_) != size) fail(errno, "cannot write the temporary file '" + temporary_ + "'");
  }

  void commit() {
    if (std::fflush(file_) != 0) fail(errno, "cannot write the temporary file '" + temporary_ + "'");
    if (::fsync(::fileno(file_)) != 0) fail(errno, "cannot fsync the temporary file '" + temporary_ + "'");
    std::FILE* f = std::exchange(file_, nullptr);
    if (std::fclose(f) != 0) fail(errno, "cannot close the temporary file '" + temporary_ + "'");
    if (std::rename(temporary_.c_str(), path_.c_str()) != 0) fail(errno, "cannot rename '" + temporary_ + "' over it");
    committed_ = true;
    // The rename itself is durable only once the directory holding it is synced.
    std::filesystem::path dir = std::filesystem::path(path_).parent_path();
    if (dir.empty()) dir = ".";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail(errno, "wrote it, but cannot open its directory '" + dir.string() + "' to fsync the rename");
    const int sync_errno = ::fsync(fd) == 0 ? 0 : errno;
    ::close(fd);
    // Some file systems cannot fsync a directory (EINVAL); they give no stronger promise to ask for.
    if (sync_errno != 0 && sync_errno != EINVAL) fail(sync_errno, "wrote it, but cannot fsync its directory '" + dir.string() + "'");
  }

 private:
  [[noreturn]] void fail(int error_number, const std::string& what) const {
    checkpoint_fail(path_, what + ": " + std::strerror(error_number) +
                               (committed_ ? "" : "; the previous file at this path, if any, is unchanged"));
  }

  std::string path_, temporary_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

inline std::string checkpoint_prefix(const std::vector<safetensors_item>& items, const checkpoint_metadata& metadata,
                                     const std::string& source) {
  const std::string header = safetensors_header_text(items, metadata, source);
  std::string out;
  append_u64_le(out, header.size());
  return out + header;
}

}  // namespace detail

// The bytes of a safetensors file holding the given parts and metadata.
inline std::vector<unsigned char> encode_checkpoint(std::initializer_list<checkpoint_part> parts,
                                                    const checkpoint_metadata& metadata = {}) {
  const auto items = detail::collect_items(parts, "<memory>");
  const std::string prefix = detail::checkpoint_prefix(items, metadata, "<memory>");
  std::vector<unsigned char> out(prefix.begin(), prefix.end());
  for (const auto& item : items) out.insert(out.end(), item.value->bytes.data(), item.value->bytes.data() + item.value->bytes.size());
  return out;
}
inline std::vector<unsigned char> encode_checkpoint(const params& tensors, const checkpoint_metadata& metadata = {}) {
  return encode_checkpoint({{"", tensors}}, metadata);
}

// Reads safetensors bytes (source names them in errors).
inline checkpoint decode_checkpoint(const unsigned char* data, std::size_t size, const std::string& source = "<memory>") {
  std::uint64_t data_offset = 0;
  const auto header = detail::parse_safetensors_prefix(
      source, size, data,
      [&](std::size_t n) { return std::string(reinterpret_cast<const char*>(data) + 8, n); }, data_offset);
  checkpoint out;
  out.metadata = header.metadata;
  for (const auto& e : header.entries)
    out.tensors.set_entry(e.name, detail::make_entry(source, e, data + data_offset + e.begin));
  return out;
}
inline checkpoint decode_checkpoint(const std::vector<unsigned char>& bytes, const std::string& source = "<memory>") {
  return decode_checkpoint(bytes.data(), bytes.size(), source);
}

// Saves parts (e.g. {{"", model}, {"adam/", optimizer_state}}) and metadata to path, atomically.
inline void save_checkpoint(const std::string& path, std::initializer_list<checkpoint_part> parts,
                            const checkpoint_metadata& metadata = {}) {
  const auto items = detail::collect_items(parts, path);
  const std::string prefix = detail::checkpoint_prefix(items, metadata, path);
  detail::atomic_file file(path);
  file.write(prefix.data(), prefix.size());
  for (const auto& item : items) file.write(item.value->bytes.data(), item.value->bytes.size());
  file.commit();
}
inline void save_checkpoint(const std::string& path, const params& tensors, const checkpoint_metadata& metadata = {}) {
  save_checkpoint(path, {{"", tensors}}, metadata);
}

// Loads and validates a checkpoint file; tensors are read straight into their own storage.
inline checkpoint load_checkpoint(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) detail::checkpoint_system_fail(path, "cannot open it", errno);
  struct closer {
    std::FILE* f;
    ~closer() { std::fclose(f); }
  } close_at_exit{f};
  struct stat info {};
  if (::fstat(::fileno(f), &info) != 0) detail::checkpoint_system_fail(path, "cannot determine its size", errno);
  const auto size = static_cast<std::uint64_t>(info.st_size);

  auto read_at = [&](std::uint64_t offset, void* out, std::size_t n) {
    if (n == 0) return;
    if (::fseeko(f, static_cast<off_t>(offset), SEEK_SET) != 0 || std::fread(out, 1, n, f) != n) {
      const int e = errno;
      const std::string what = "cannot read " + std::to_string(n) + " bytes at offset " + std::to_string(offset);
      if (std::ferror(f)) detail::checkpoint_system_fail(path, what, e);
      detail::checkpoint_fail(path, what + " (the file shrank while being read)");
    }
  };
  unsigned char length_field[8] = {};
  read_at(0, length_field, std::min<std::uint64_t>(size, 8));
  std::uint64_t data_offset = 0;
  const auto header = detail::parse_safetensors_prefix(
      path, size, length_field,
      [&](std::size_t n) {
        std::string text(n, '\0');
        read_at(8, text.data(), n);
        return text;
      },
      data_offset);

  checkpoint out;
  out.metadata = header.metadata;
  std::vector<unsigned char> staging;  // U8 and BOOL tensors pass through it for conversion or checking
  for (const auto& e : header.entries) {
    const auto bytes = static_cast<std::size_t>(e.end - e.begin);
    if (e.file_dtype == "U8" || e.type == dtype::boolean) {
      staging.resize(bytes);
      read_at(data_offset + e.begin, staging.data(), bytes);
      out.tensors.set_entry(e.name, detail::make_entry(path, e, staging.data()));
    } else {
      params::entry entry{e.type, e.extents, aligned_buffer<unsigned char>(bytes)};
      read_at(data_offset + e.begin, entry.bytes.data(), bytes);
      out.tensors.set_entry(e.name, std::move(entry));
    }
  }
  return out;
}

}  // namespace symflow
