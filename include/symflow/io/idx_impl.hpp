#pragma once
// The definitions behind idx.hpp: reading (and inflating) IDX files. Included by it, or compiled
// once in the library unit under SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp).
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "../core/error.hpp"
#include "../core/file_limits.hpp"
#include "../core/shape.hpp"
#include "../core/tensor.hpp"

#include "idx.hpp"

namespace symflow {

namespace detail {

inline std::string idx_hex(std::uint32_t v) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08X", static_cast<unsigned>(v));
  return text;
}

inline std::string describe_idx_magic(std::uint32_t magic) {
  const auto code = static_cast<std::uint8_t>(magic >> 8);
  std::string out = idx_hex(magic);
  if ((magic >> 16) == 0 && is_idx_type_code(code))
    out += " (" + std::string(idx_type_name(static_cast<idx_type>(code))) + ", rank " + std::to_string(magic & 0xFF) + ")";
  return out;
}

// The bytes of a file, inflated on the way when it is gzip-compressed. read() returns fewer bytes
// than asked only at the end of the (decompressed) stream, so callers can say how much there was.
class idx_byte_reader {
 public:
  idx_byte_reader(std::string path, std::string expectation) : path_(std::move(path)), expectation_(std::move(expectation)) {
    // A directory, device or FIFO is refused before opening: /dev/zero would inflate or read forever,
    // and opening a FIFO blocks. The data cap below bounds regular files.
    struct stat info {};
    if (::stat(path_.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
      throw data_error("idx: '" + printable_path(path_) + "' is " + file_kind(info.st_mode) + ", not a regular file; " + expectation_);
    file_.reset(std::fopen(path_.c_str(), "rb"));
    if (!file_) {
      const int e = errno;
      throw data_error("idx: cannot open '" + path_ + "': " + std::strerror(e) + "; " + expectation_);
    }
    std::error_code ec;
    file_size_ = std::filesystem::file_size(path_, ec);
    if (ec) fail("cannot determine the file size: " + ec.message());
    refill();
    compressed_ = in_.size() >= 2 && buffer_[0] == 0x1F && buffer_[1] == 0x8B;
    if (compressed_) {
      // 16 + MAX_WBITS: a gzip wrapper, which zlib checks (header, CRC-32, length) for us.
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) fail("zlib cannot start decompressing");
      z_ready_ = true;
    }
  }
  idx_byte_reader(const idx_byte_reader&) = delete;
  idx_byte_reader& operator=(const idx_byte_reader&) = delete;
  ~idx_byte_reader() {
    if (z_ready_) inflateEnd(&z_);
  }

  bool compressed() const { return compressed_; }
  std::uint64_t file_size() const { return file_size_; }

  std::size_t read(unsigned char* out, std::size_t n) {
    return compressed_ ? inflate_into(out, n) : copy_into(out, n);
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw data_error("idx: '" + printable_path(path_) + "'" + (compressed_ ? " (gzip)" : "") + ": " + what);
  }

 private:
  struct pending {
    std::size_t begin = 0, end = 0;
    std::size_t size() const { return end - begin; }
  };

  void refill() {
    const std::size_t got = std::fread(buffer_.data(), 1, buffer_.size(), file_.get());
    if (got < buffer_.size()) {
      if (std::ferror(file_.get())) fail(std::string("read error: ") + std::strerror(errno));
      at_eof_ = true;
    }
    in_ = {0, got};
  }

  std::size_t copy_into(unsigned char* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      if (in_.size() == 0) {
        if (at_eof_) break;
        // Large reads go straight to the caller's storage instead of through the buffer.
        if (n - got >= buffer_.size()) {
          const std::size_t direct = std::fread(out + got, 1, n - got, file_.get());
          if (direct < n - got) {
            if (std::ferror(file_.get())) fail(std::string("read error: ") + std::strerror(errno));
            at_eof_ = true;
          }
          got += direct;
          continue;
        }
        refill();
        continue;
      }
      const std::size_t k = std::min(n - got, in_.size());
      std::memcpy(out + got, buffer_.data() + in_.begin, k);
      in_.begin += k;
      got += k;
    }
    return got;
  }

  std::size_t inflate_into(unsigned char* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      if (member_ended_) {
        // gzip allows several members back to back; anything after the last one must be another.
        if (in_.size() == 0 && !at_eof_) refill();
        if (in_.size() == 0) break;
        if (inflateReset(&z_) != Z_OK) fail("zlib cannot restart for the next gzip member");
        member_ended_ = false;
      }
      if (in_.size() == 0 && !at_eof_) refill();
      z_.next_in = buffer_.data() + in_.begin;
      z_.avail_in = static_cast<uInt>(in_.size());
      z_.next_out = out + got;
      z_.avail_out = static_cast<uInt>(std::min<std::size_t>(n - got, UINT_MAX));
      const int rc = inflate(&z_, Z_NO_FLUSH);
      in_.begin = in_.end - z_.avail_in;
      got = static_cast<std::size_t>(z_.next_out - out);
      if (rc == Z_STREAM_END) {
        member_ended_ = true;
      } else if (rc == Z_BUF_ERROR || (rc == Z_OK && in_.size() == 0 && at_eof_ && got < n)) {
        if (in_.size() == 0 && at_eof_)
          fail("the compressed stream ends early (the .gz file is truncated) after " + std::to_string(total_ + got) +
               " decompressed bytes; " + expectation_);
      } else if (rc != Z_OK) {
        fail(std::string("corrupt compressed data: ") + (z_.msg ? z_.msg : "zlib error " + std::to_string(rc)) + "; " +
             expectation_);
      }
    }
    total_ += got;
    return got;
  }

  struct file_closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  std::string path_, expectation_;
  std::unique_ptr<std::FILE, file_closer> file_;
  std::uint64_t file_size_ = 0;
  std::array<unsigned char, 1 << 16> buffer_{};
  pending in_;
  bool at_eof_ = false, compressed_ = false, z_ready_ = false, member_ended_ = false;
  std::uint64_t total_ = 0;
  z_stream z_{};
};

inline std::uint32_t read_big_endian_u32(const unsigned char* p) {
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | std::uint32_t(p[3]);
}

// IDX stores big-endian; the host's order is what to_tensor and for_each_element read.
inline void idx_to_host_order(std::vector<unsigned char>& bytes, std::size_t element_size) {
  if constexpr (std::endian::native == std::endian::little) {
    if (element_size == 1) return;
    for (std::size_t i = 0; i + element_size <= bytes.size(); i += element_size)
      std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(i), bytes.begin() + static_cast<std::ptrdiff_t>(i + element_size));
  }
}

inline idx_array read_idx(const std::string& path, std::optional<std::uint32_t> expected_magic, const idx_read_options& options) {
  const std::string expectation =
      expected_magic ? "expected an IDX file with magic " + describe_idx_magic(*expected_magic)
                     : std::string("expected an IDX file (magic 0x0000TTRR: type code TT, rank RR)");
  idx_byte_reader in(path, expectation);

  unsigned char head[4];
  const std::size_t head_bytes = in.read(head, 4);
  if (head_bytes < 4)
    in.fail("truncated: the magic needs 4 bytes, found " + std::to_string(head_bytes) + "; " + expectation);
  const std::uint32_t magic = read_big_endian_u32(head);
  if (expected_magic && magic != *expected_magic)
    in.fail("wrong magic: expected " + describe_idx_magic(*expected_magic) + ", found " + describe_idx_magic(magic));
  if (head[0] != 0 || head[1] != 0 || !is_idx_type_code(head[2]))
    in.fail("wrong magic: " + expectation + ", found " + idx_hex(magic));
  const std::size_t rank = head[3];
  if (rank == 0) in.fail("the header gives rank 0 (magic " + idx_hex(magic) + "); IDX arrays have at least one axis");

  idx_array out;
  out.source = path;
  out.type = static_cast<idx_type>(head[2]);
  const std::size_t element_size = idx_type_size(out.type);
  std::vector<unsigned char> dims(4 * rank);
  const std::size_t dim_bytes = in.read(dims.data(), dims.size());
  if (dim_bytes < dims.size())
    in.fail("truncated header: " + std::to_string(rank) + " extents need " + std::to_string(dims.size()) +
            " bytes, found " + std::to_string(dim_bytes));

  // Extents are u32, so a product overflows 64 bits only past 2^62 bytes: capped well below.
  constexpr std::uint64_t max_bytes = std::uint64_t(1) << 48;
  std::uint64_t count = 1;
  bool too_large = false;
  for (std::size_t a = 0; a < rank; ++a) {
    const std::uint64_t e = read_big_endian_u32(dims.data() + 4 * a);
    out.extents.push_back(static_cast<std::size_t>(e));
    if (e != 0 && count > max_bytes / element_size / e) too_large = true;
    else count *= e;
  }
  if (std::find(out.extents.begin(), out.extents.end(), std::size_t(0)) != out.extents.end()) {
    count = 0;
    too_large = false;
  }
  if (too_large) in.fail("the header's shape " + format_extents(out.extents) + " is larger than any file (over 2^48 bytes)");
  const std::uint64_t data_bytes = count * element_size;
  if (data_bytes > options.max_data_bytes)
    in.fail("the header's shape " + format_extents(out.extents) + " of " + std::string(idx_type_name(out.type)) + " needs " +
            std::to_string(data_bytes) + " data bytes, over the limit max_data_bytes = " + std::to_string(options.max_data_bytes) +
            " (idx_read_options)");
  const std::uint64_t header_bytes = 4 + 4 * rank;
  const std::string need = "shape " + format_extents(out.extents) + " of " + std::string(idx_type_name(out.type)) +
                           " needs " + std::to_string(data_bytes) + " data bytes";

  if (!in.compressed()) {
    const std::uint64_t available = in.file_size() - header_bytes;
    if (available != data_bytes)
      in.fail(std::string(available < data_bytes ? "truncated" : "trailing bytes") + ": " + need + " after the " +
              std::to_string(header_bytes) + "-byte header, the file has " + std::to_string(available));
    out.bytes.resize(static_cast<std::size_t>(data_bytes));
    const std::size_t got = in.read(out.bytes.data(), out.bytes.size());
    if (got != data_bytes)
      in.fail("the file shrank while being read: " + need + ", read " + std::to_string(got));
  } else {
    constexpr std::size_t chunk = std::size_t(1) << 20;
    std::uint64_t got = 0;
    while (got < data_bytes) {
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, data_bytes - got));
      // Grow by doubling but never past the declared size, so capacity stays within it.
      if (out.bytes.capacity() < got + want)
        out.bytes.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(data_bytes, std::max<std::uint64_t>(2 * out.bytes.capacity(), got + want))));
      out.bytes.resize(static_cast<std::size_t>(got) + want);
      const std::size_t k = in.read(out.bytes.data() + got, want);
      got += k;
      if (k < want) in.fail("truncated: " + need + ", the decompressed file has " + std::to_string(got));
    }
    unsigned char extra;
    if (in.read(&extra, 1) != 0) in.fail("trailing bytes: " + need + ", the decompressed file has more");
  }
  idx_to_host_order(out.bytes, element_size);
  return out;
}

}  // namespace detail

// Any IDX file: the element type and rank come from its header.
SYMFLOW_LIBRARY_LINKAGE idx_array read_idx(const std::string& path, const idx_read_options& options) {
  return detail::read_idx(path, std::nullopt, options);
}

// An IDX file that must hold the given element type and rank (e.g. u8 rank 3 for images).
SYMFLOW_LIBRARY_LINKAGE idx_array read_idx(const std::string& path, idx_type type, std::uint8_t rank, const idx_read_options& options) {
  return detail::read_idx(path, idx_magic(type, rank), options);
}

}  // namespace symflow
