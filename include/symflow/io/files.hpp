#pragma once
// Whole-file helpers: every reader and writer of whole files goes through these.
//
// Reading: read_file_bytes(path, max_bytes, what) is the bounded read for untrusted input (graph
// files, .npy arrays, the CLI): a regular file of at most max_bytes, else a file_error naming the file
// (core/file_limits.hpp refuses a directory, a device or a FIFO before reading, and any file past the
// limit). read_file_bytes(std::filesystem::path) is the same read for caches of generated code: no
// limit, and "" when it fails, since a missing or unreadable entry is only a miss.
//
// Writing: atomic_file writes through a temporary file beside the target and renames it over the
// target once complete, so a reader sees the old file or the whole new one, never a part; the
// temporary is removed unless committed. write_file_bytes (graph and .npy files: throws) and
// write_file_atomically (caches: returns whether it wrote) are the one-call forms; checkpoints use
// atomic_file itself, with a temporary name of their own and a durable commit.
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "../core/error.hpp"
#include "../core/file_limits.hpp"

namespace symflow {

// --- Reading

// The whole of a regular file of at most max_bytes bytes, or a file_error that names it as `what`
// ("graph file", "npy file"). The defaults are a graph file's.
inline std::vector<unsigned char> read_file_bytes(const std::string& path, std::uint64_t max_bytes = graph_file_max_bytes,
                                                  std::string_view what = "graph file") {
  return read_regular_file(path, max_bytes, what);
}

// For caches: the file's bytes (no size limit), or "" when it is missing, unreadable or not a
// regular file. (Its own name: an overload of read_file_bytes would be picked by the argument's
// type, and a path converts to a string, so a caller could get the throwing reader by accident.)
inline std::string read_file_or_empty(const std::filesystem::path& path) {
  try {
    return read_regular_file<std::string>(path.string(), std::numeric_limits<std::uint64_t>::max(), "cache file");
  } catch (const file_error&) {
    return {};
  }
}

// --- Writing

// A name beside `path` that no other process or thread uses: "<path>.tmp.<pid>.<n>".
inline std::filesystem::path temporary_sibling(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  return path.string() + ".tmp." + std::to_string(long(::getpid())) + "." + std::to_string(counter++);
}

// Writes PATH so that it holds either its old contents or all of the new ones, never a part: the
// bytes go to `temporary` (by default temporary_sibling(PATH)), which commit() renames over PATH.
// The temporary is removed unless committed, whether a step failed or the writer was abandoned.
// Steps report failure by returning false, for the caller to report in its own terms; failure()
// then says what failed, e.g. "cannot write the temporary file 'PATH.tmp.41.0': No space left on
// device". After a failure, later steps do nothing and return false.
class atomic_file {
 public:
  explicit atomic_file(const std::filesystem::path& path) : atomic_file(path, temporary_sibling(path)) {}
  atomic_file(std::filesystem::path path, std::filesystem::path temporary)
      : path_(std::move(path)), temporary_(std::move(temporary)) {
    file_ = std::fopen(temporary_.c_str(), "wb");
    created_ = file_ != nullptr;
    if (!created_) fail(errno, "cannot create the temporary file '" + temporary_.string() + "'");
  }
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  ~atomic_file() {
    if (file_) std::fclose(file_);
    if (created_ && !committed_) std::remove(temporary_.c_str());
  }

  // Whether the temporary file was created (false: failure() says why).
  bool is_open() const noexcept { return created_; }
  bool committed() const noexcept { return committed_; }
  const std::string& failure() const noexcept { return failure_; }

  bool write(const void* data, std::size_t size) {
    if (!file_) return false;
    if (size && std::fwrite(data, 1, size, file_) != size)
      return fail(errno, "cannot write the temporary file '" + temporary_.string() + "'");
    return true;
  }

  // Renames the temporary over PATH. durable: the bytes are synced to the disk before the rename and
  // the directory after it, so that the new file survives a crash of the system too.
  bool commit(bool durable = false) {
    if (!file_) return false;
    const std::string temporary = "the temporary file '" + temporary_.string() + "'";
    if (std::fflush(file_) != 0) return fail(errno, "cannot write " + temporary);
    if (durable && ::fsync(::fileno(file_)) != 0) return fail(errno, "cannot fsync " + temporary);
    std::FILE* f = std::exchange(file_, nullptr);
    if (std::fclose(f) != 0) return fail(errno, "cannot close " + temporary);
    if (std::rename(temporary_.c_str(), path_.c_str()) != 0)
      return fail(errno, "cannot rename '" + temporary_.string() + "' over it");
    committed_ = true;
    if (!durable) return true;
    // The rename itself is durable only once the directory holding it is synced.
    std::filesystem::path dir = path_.parent_path();
    if (dir.empty()) dir = ".";
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fail(errno, "wrote it, but cannot open its directory '" + dir.string() + "' to fsync the rename");
    const int sync_errno = ::fsync(fd) == 0 ? 0 : errno;
    ::close(fd);
    // Some file systems cannot fsync a directory (EINVAL); they give no stronger promise to ask for.
    if (sync_errno != 0 && sync_errno != EINVAL) return fail(sync_errno, "wrote it, but cannot fsync its directory '" + dir.string() + "'");
    return true;
  }

 private:
  bool fail(int error_number, const std::string& what) {
    if (failure_.empty()) failure_ = what + ": " + std::strerror(error_number);
    if (file_) std::fclose(std::exchange(file_, nullptr));
    return false;
  }

  std::filesystem::path path_, temporary_;
  std::FILE* file_ = nullptr;
  bool created_ = false, committed_ = false;
  std::string failure_;
};

// Writes a graph or .npy file through atomic_file; throws error naming the path when it cannot.
inline void write_file_bytes(const std::string& path, const void* data, std::size_t size) {
  atomic_file file(path);
  if (!file.is_open()) throw error("cannot open '" + path + "' for writing");
  if (!file.write(data, size) || !file.commit()) throw error("cannot write '" + path + "'");
}

// Writes a cache entry through atomic_file, making its directory first. An unwritable directory is
// not an error (a cache then only costs recomputation): returns whether it was written.
inline bool write_file_atomically(const std::filesystem::path& path, const std::string& bytes) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  atomic_file file(path);
  return file.write(bytes.data(), bytes.size()) && file.commit();
}

}  // namespace symflow
