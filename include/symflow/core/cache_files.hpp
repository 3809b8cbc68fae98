#pragma once
// Helpers for the on-disk caches of code generated at run time (CPU passes, NVRTC kernels): a
// content hash for cache keys, whole-file reads, and writes that readers never see half done.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#if defined(__unix__)
#include <unistd.h>
#endif

namespace symflow {

// 64-bit FNV-1a over a sequence of strings (not cryptographic: it names cache entries).
struct content_hash {
  std::uint64_t h = 1469598103934665603ull;
  void add(std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
    // A separator, so that ("ab", "c") and ("a", "bc") differ.
    h ^= 0xFFu;
    h *= 1099511628211ull;
  }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }
};

// The file's bytes, or "" when it cannot be read.
inline std::string read_file_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return {};
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A name next to `path` that no other process or thread uses: "<path>.tmp.<pid>.<n>".
inline std::filesystem::path temporary_sibling(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
#if defined(__unix__)
  const long pid = long(::getpid());
#else
  const long pid = 0;
#endif
  return path.string() + ".tmp." + std::to_string(pid) + "." + std::to_string(counter++);
}

// Writes through a temporary and renames it, so a reader sees the whole file or none. An unwritable
// directory is not an error (a cache then only costs recomputation): returns whether it was written.
inline bool write_file_atomically(const std::filesystem::path& path, const std::string& bytes) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const auto tmp = temporary_sibling(path);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f.write(bytes.data(), std::streamsize(bytes.size()));
    if (!f) {
      f.close();
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

}  // namespace symflow
