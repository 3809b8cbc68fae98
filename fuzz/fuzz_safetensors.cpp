// libFuzzer target: decode_checkpoint (safetensors) on arbitrary bytes. An accepted checkpoint must
// encode again, and decoding that must give the same tensors and metadata (every dtype is kept as
// written, so the comparison is on the decoded values).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <symflow/train/checkpoint.hpp>

#include "fuzz_support.hpp"

using symflow_fuzz::must_succeed;
using symflow_fuzz::report_bug;

namespace {
bool same(const symflow::params& a, const symflow::params& b) {
  if (a.names() != b.names()) return false;
  for (const auto& name : a.names()) {
    const auto &x = a.at(name), &y = b.at(name);
    if (x.type != y.type || x.extents != y.extents || x.bytes.size() != y.bytes.size()) return false;
    if (x.bytes.size() && std::memcmp(x.bytes.data(), y.bytes.data(), x.bytes.size()) != 0) return false;
  }
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  symflow::checkpoint c;
  if (!symflow_fuzz::loads([&] { c = symflow::decode_checkpoint(data, size, "fuzz.safetensors"); })) return 0;
  must_succeed("safetensors round trip", [&] {
    const auto bytes = symflow::encode_checkpoint(c.tensors, c.metadata);
    const symflow::checkpoint back = symflow::decode_checkpoint(bytes, "re-encoded");
    if (!same(back.tensors, c.tensors)) report_bug("decode(encode(c)).tensors != c.tensors");
    if (back.metadata != c.metadata) report_bug("decode(encode(c)).metadata != c.metadata");
    if (symflow::encode_checkpoint(back.tensors, back.metadata) != bytes) report_bug("encode -> decode -> encode changed the bytes");
  });
  return 0;
}
