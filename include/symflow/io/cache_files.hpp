#pragma once
// Helpers for the on-disk caches of code generated at run time (CPU passes, NVRTC kernels): a
// content hash for cache keys, and the checks that make a cache directory safe to load code from
// (docs/security.md): a directory another user can write to would let that user choose the code a
// process loads. Whole-file reads and writes that readers never see half done are io/files.hpp's
// (read_file_or_empty, write_file_atomically, temporary_sibling), included here for the caches.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#if defined(__unix__)
#include <sys/stat.h>
#include <unistd.h>
#endif

#include "files.hpp"
#include "../core/sha256.hpp"

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

// Makes `dir` (and its missing parents) and checks that only this user can change what is in it: a
// real directory (not a symbolic link), owned by this user, writable by no group and no other user.
// A directory this call creates gets mode 0700. Returns "" when the directory is fit for a cache of
// code, else why not (the caller then compiles without a disk cache).
inline std::string prepare_private_directory(const std::filesystem::path& dir) {
  std::error_code ec;
#if defined(__unix__)
  if (!std::filesystem::exists(dir.parent_path(), ec)) std::filesystem::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return "cannot create " + dir.string();
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return "cannot examine " + dir.string();
  if (!S_ISDIR(st.st_mode)) return dir.string() + " is not a directory (a symbolic link or a file is refused)";
  if (st.st_uid != ::geteuid())
    return dir.string() + " is owned by user " + std::to_string(st.st_uid) + ", not by this user (" +
           std::to_string(::geteuid()) + ")";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return dir.string() + " is writable by other users (mode " + std::to_string((st.st_mode >> 6) & 7) +
           std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) + "; 0700 expected)";
  return {};
#else
  std::filesystem::create_directories(dir, ec);
  return ec ? "cannot create " + dir.string() : std::string{};
#endif
}

// A cache entry whose bytes are checked before use: `path` holds the bytes, `path`.sha256 their
// SHA-256 (written by whoever builds the entry, digest first). Whether the file at `path` has the
// digest recorded beside it (false when either is missing).
inline bool verified_entry_matches(const std::filesystem::path& path) {
  const std::string recorded = read_file_or_empty(std::filesystem::path(path.string() + ".sha256"));
  if (recorded.size() != 64) return false;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  return sha256::of(read_file_or_empty(path)) == recorded;
}

}  // namespace symflow
