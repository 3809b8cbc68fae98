#pragma once
// Reading a whole input file with a bound: the one place where readers of untrusted files (graph
// files, .npy arrays, the CLI) turn a path into bytes. A device (/dev/zero), a FIFO or a directory
// given as a file is refused before anything is read, since such a "file" can be endless or not
// data at all; a regular file larger than the format's limit is refused before its bytes are
// allocated; and the read itself stops one byte past the limit, so a file that grows while being
// read cannot push the buffer past it either.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "excerpt.hpp"

namespace symflow {

// Default limits per format, chosen far above what the project writes (docs/security.md).
inline constexpr std::uint64_t graph_file_max_bytes = std::uint64_t(1) << 31;  // 2 GiB: graphs with embedded parameters
inline constexpr std::uint64_t npy_file_max_bytes = std::uint64_t(1) << 32;    // 4 GiB: one array

namespace detail {
// A file name as messages show it: at most 200 bytes, control characters escaped.
inline std::string printable_path(std::string_view path) { return excerpt(path, 200); }

[[noreturn]] inline void file_fail(std::string_view what, const std::string& path, const std::string& problem) {
  throw file_error(std::string(what) + " '" + printable_path(path) + "': " + problem);
}

[[noreturn]] inline void open_fail(std::string_view what, const std::string& path, int error_number) {
  throw file_error("cannot open '" + printable_path(path) + "' (" + std::string(what) + "): " + std::strerror(error_number));
}

inline std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}
}  // namespace detail

// Throws file_error unless path names a regular file (after symlinks) of at most max_bytes bytes;
// returns its size. `what` names the kind of file in the message ("graph file", "npy file").
inline std::uint64_t check_regular_file(const std::string& path, std::uint64_t max_bytes, std::string_view what) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) detail::open_fail(what, path, errno);
  if (!S_ISREG(info.st_mode)) detail::file_fail(what, path, "is " + detail::file_kind(info.st_mode) + ", not a regular file");
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes)
    detail::file_fail(what, path, "file size " + std::to_string(size) + " bytes exceeds the limit of " + std::to_string(max_bytes) + " bytes");
  return size;
}

// The whole of a regular file of at most max_bytes bytes, as bytes or (Bytes = std::string) text.
// io/files.hpp's read_file_bytes is the usual way in.
template <class Bytes = std::vector<unsigned char>>
Bytes read_regular_file(const std::string& path, std::uint64_t max_bytes, std::string_view what) {
  // O_NONBLOCK: opening a FIFO swapped in after the stat below must not block; regular files ignore it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) detail::open_fail(what, path, errno);
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_at_exit{fd};
  // fstat on the open descriptor: the file checked is the file read, whatever happens to the name.
  struct stat info {};
  if (::fstat(fd, &info) != 0) detail::file_fail(what, path, std::string("cannot stat it: ") + std::strerror(errno));
  if (!S_ISREG(info.st_mode)) detail::file_fail(what, path, "is " + detail::file_kind(info.st_mode) + ", not a regular file");
  const auto size = static_cast<std::uint64_t>(info.st_size);
  if (size > max_bytes)
    detail::file_fail(what, path, "file size " + std::to_string(size) + " bytes exceeds the limit of " + std::to_string(max_bytes) + " bytes");
  Bytes out(static_cast<std::size_t>(size), 0);
  std::size_t got = 0;
  for (;;) {
    if (got == out.size()) {
      // The file may have grown since fstat: look for more, but never past the limit.
      if (out.size() >= max_bytes) {
        unsigned char probe;
        const ssize_t k = ::read(fd, &probe, 1);
        if (k > 0) detail::file_fail(what, path, "grew past the limit of " + std::to_string(max_bytes) + " bytes while being read");
        if (k < 0 && errno == EINTR) continue;
        break;
      }
      out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(max_bytes, out.size() + std::max<std::size_t>(out.size(), 4096))));
    }
    const ssize_t k = ::read(fd, out.data() + got, out.size() - got);
    if (k < 0) {
      if (errno == EINTR) continue;
      detail::file_fail(what, path, std::string("read error: ") + std::strerror(errno));
    }
    if (k == 0) break;
    got += static_cast<std::size_t>(k);
  }
  out.resize(got);
  return out;
}

}  // namespace symflow
