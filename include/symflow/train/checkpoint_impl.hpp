#pragma once
// The definitions behind checkpoint.hpp: writing and validating safetensors files. Included by
// checkpoint.hpp, or compiled once in the library unit under SYMFLOW_SEPARATE_COMPILATION.
#include <fcntl.h>
#include <signal.h>
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
#include "../core/excerpt.hpp"
#include "../core/params.hpp"
#include "../io/files.hpp"
#include "checkpoint.hpp"
#include "../io/safetensors_header.hpp"

namespace symflow {

// The tensors whose names start with prefix, under their names without it.
SYMFLOW_LIBRARY_LINKAGE params checkpoint::part(std::string_view prefix) const {
  params out;
  for (const std::string& name : tensors.names())
    if (name.size() >= prefix.size() && std::string_view(name).substr(0, prefix.size()) == prefix)
      out.set_entry(name.substr(prefix.size()), tensors.at(name));
  return out;
}

namespace detail {

// Fills a params entry from the file's bytes for e (already known to be e.end - e.begin long).
inline params::entry make_entry(const std::string& source, const safetensors_entry& e, const unsigned char* file_bytes) {
  const std::size_t count = e.file_element_size ? static_cast<std::size_t>((e.end - e.begin) / e.file_element_size) : 0;
  params::entry out{e.type, e.extents, aligned_buffer<unsigned char>(count * dtype_size(e.type))};
  if (count) std::memcpy(out.bytes.data(), file_bytes, count * dtype_size(e.type));
  if (e.type == dtype::boolean)
    for (std::size_t i = 0; i < count; ++i)
      if (file_bytes[i] > 1)
        checkpoint_fail(source, "tensor '" + excerpt(e.name) + "' is BOOL but element " + std::to_string(i) + " is " +
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

// Removes PATH.tmp.<pid> files left by writers that died mid-write: those whose pid is not this
// process and names no process at all (ESRCH). A live pid, or one we may not signal (EPERM), keeps
// its file: it may be a save in progress. Best effort: a directory that cannot be listed is left.
inline void remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  const std::string prefix = target.filename().string() + ".tmp.";
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::stol(digits);
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

inline std::string checkpoint_prefix(const std::vector<safetensors_item>& items, const checkpoint_metadata& metadata,
                                     const std::string& source) {
  const std::string header = safetensors_header_text(items, metadata, source);
  std::string out;
  append_u64_le(out, header.size());
  return out + header;
}

}  // namespace detail

// The bytes of a safetensors file holding the given parts and metadata.
SYMFLOW_LIBRARY_LINKAGE std::vector<unsigned char> encode_checkpoint(std::initializer_list<checkpoint_part> parts,
                                                    const checkpoint_metadata& metadata) {
  const auto items = detail::collect_items(parts, "<memory>");
  const std::string prefix = detail::checkpoint_prefix(items, metadata, "<memory>");
  std::vector<unsigned char> out(prefix.begin(), prefix.end());
  for (const auto& item : items) out.insert(out.end(), item.value->bytes.data(), item.value->bytes.data() + item.value->bytes.size());
  return out;
}
SYMFLOW_LIBRARY_LINKAGE std::vector<unsigned char> encode_checkpoint(const params& tensors, const checkpoint_metadata& metadata) {
  return encode_checkpoint({{"", tensors}}, metadata);
}

// Reads safetensors bytes (source names them in errors).
SYMFLOW_LIBRARY_LINKAGE checkpoint decode_checkpoint(const unsigned char* data, std::size_t size, const std::string& source) {
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
SYMFLOW_LIBRARY_LINKAGE checkpoint decode_checkpoint(const std::vector<unsigned char>& bytes, const std::string& source) {
  return decode_checkpoint(bytes.data(), bytes.size(), source);
}

// Saves parts (e.g. {{"", model}, {"adam/", optimizer_state}}) and metadata to path, atomically.
SYMFLOW_LIBRARY_LINKAGE void save_checkpoint(const std::string& path, std::initializer_list<checkpoint_part> parts,
                            const checkpoint_metadata& metadata) {
  const auto items = detail::collect_items(parts, path);
  const std::string prefix = detail::checkpoint_prefix(items, metadata, path);
  detail::remove_stale_temporaries(path);
  // Through PATH.tmp.<pid> (the name remove_stale_temporaries looks for), synced before and after the
  // rename: PATH holds either the previous checkpoint or all of this one, even after a crash.
  atomic_file file(path, path + ".tmp." + std::to_string(::getpid()));
  const auto check = [&](bool ok) {
    if (!ok)
      detail::checkpoint_fail(path, file.failure() +
                                        (file.committed() ? "" : "; the previous file at this path, if any, is unchanged"));
  };
  check(file.is_open());
  check(file.write(prefix.data(), prefix.size()));
  for (const auto& item : items) check(file.write(item.value->bytes.data(), item.value->bytes.size()));
  check(file.commit(/*durable=*/true));
}
SYMFLOW_LIBRARY_LINKAGE void save_checkpoint(const std::string& path, const params& tensors, const checkpoint_metadata& metadata) {
  save_checkpoint(path, {{"", tensors}}, metadata);
}

// Loads and validates a checkpoint file; tensors are read straight into their own storage.
SYMFLOW_LIBRARY_LINKAGE checkpoint load_checkpoint(const std::string& path) {
  // stat before open: opening a FIFO would block until some writer appears.
  struct stat named {};
  if (::stat(path.c_str(), &named) == 0 && !S_ISREG(named.st_mode))
    detail::checkpoint_fail(path, "not a regular file (a directory, device or FIFO)");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) detail::checkpoint_system_fail(path, "cannot open it", errno);
  struct closer {
    std::FILE* f;
    ~closer() { std::fclose(f); }
  } close_at_exit{f};
  struct stat info {};
  if (::fstat(::fileno(f), &info) != 0) detail::checkpoint_system_fail(path, "cannot determine its size", errno);
  // A device or FIFO has no size to check the header against (and /dev/zero never ends).
  if (!S_ISREG(info.st_mode)) detail::checkpoint_fail(path, "not a regular file (a directory, device or FIFO)");
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
  unsigned char length_field[8];
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
  std::vector<unsigned char> staging;  // BOOL tensors pass through it for checking
  for (const auto& e : header.entries) {
    const auto bytes = static_cast<std::size_t>(e.end - e.begin);
    if (e.type == dtype::boolean) {
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
