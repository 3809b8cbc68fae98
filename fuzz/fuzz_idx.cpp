// libFuzzer target: read_idx on arbitrary files, plain and gzip. The reader takes a path, so each
// input is written to a file of this process first. The first byte picks how: even, the rest is
// the file as is (a .gz seed goes through inflate since the reader detects gzip by its magic); odd,
// the rest is gzip-compressed first, so that mutations of IDX content also reach the inflating path
// with a valid stream. The data cap is 1 MiB here (the default is 2 GiB), far below libFuzzer's
// 16 MiB allocation limit: a header claiming more must be refused, never allocated.
#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <symflow/io/idx.hpp>

#include "fuzz_support.hpp"

using symflow_fuzz::must_succeed;
using symflow_fuzz::report_bug;

namespace {
std::vector<unsigned char> gzip(const std::uint8_t* data, std::size_t size) {
  z_stream z{};
  // Fast and small (level 1, a 512-byte window, least memory): inputs are at most 64 KiB, and the
  // point is a valid stream, not a small one.
  if (deflateInit2(&z, 1, Z_DEFLATED, 16 + 9, 1, Z_DEFAULT_STRATEGY) != Z_OK) report_bug("deflateInit2");
  std::vector<unsigned char> out(deflateBound(&z, static_cast<uLong>(size)) + 32);
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) report_bug("deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// One scratch file per process, removed when the process exits normally.
const std::string& scratch_path() {
  static const struct scratch {
    std::string path = "/tmp/symflow-fuzz-idx-" + std::to_string(::getpid());
    ~scratch() { std::remove(path.c_str()); }
  } file;
  return file.path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::vector<unsigned char> file = (data[0] & 1) ? gzip(data + 1, size - 1) : std::vector<unsigned char>(data + 1, data + size);
  std::FILE* f = std::fopen(scratch_path().c_str(), "wb");
  if (!f) report_bug("cannot write the scratch file");
  if (!file.empty() && std::fwrite(file.data(), 1, file.size(), f) != file.size()) report_bug("cannot write the scratch file");
  std::fclose(f);

  symflow::idx_array a;
  if (!symflow_fuzz::loads([&] { a = symflow::read_idx(scratch_path(), symflow::idx_read_options{.max_data_bytes = 1 << 20}); }))
    return 0;
  must_succeed("idx contents", [&] {
    std::uint64_t count = 1;
    for (auto e : a.extents) count *= e;
    if (a.bytes.size() != count * symflow::idx_type_size(a.type)) report_bug("the data size does not match the extents");
    // Every element converts to double exactly (no float-cast overflow): visit them all.
    double sum = 0;
    std::size_t visited = 0;
    a.for_each_element([&](auto v) {
      sum += static_cast<double>(v);
      ++visited;
    });
    if (visited != a.size()) report_bug("for_each_element visited the wrong number of elements");
    if (a.extents.size() == 1) (void)a.to_tensor<double, 1>();
    if (a.extents.size() == 3) (void)a.to_tensor<float, 3>().size();
  });
  return 0;
}
