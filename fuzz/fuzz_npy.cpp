// libFuzzer target: read_npy on arbitrary bytes. An accepted array must survive write -> read
// unchanged, and writing it again must give the same bytes.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <symflow/io/npy.hpp>

#include "fuzz_support.hpp"

using symflow_fuzz::must_succeed;
using symflow_fuzz::report_bug;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  symflow::graph_tensor t;
  if (!symflow_fuzz::loads([&] { t = symflow::read_npy(data, size); })) return 0;

  must_succeed(".npy round trip", [&] {
    const auto written = symflow::write_npy(t);
    const symflow::graph_tensor back = symflow::read_npy(written);
    if (!(back == t)) report_bug("read_npy(write_npy(t)) != t");
    if (symflow::write_npy(back) != written) report_bug(".npy write -> read -> write changed the bytes");
  });
  return 0;
}
