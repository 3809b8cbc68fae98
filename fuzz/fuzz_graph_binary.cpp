// libFuzzer target: load_graph_binary on arbitrary bytes. The encoding has one spelling per graph,
// so an accepted file must be re-saved to exactly its own bytes; the graph must also survive JSON.
//
// Random mutations almost never keep the CRC-32 right, so each input is loaded twice: as given
// (reaching the header checks) and with the header's payload size and checksum made to match
// (reaching the payload parser and validate).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <symflow/graph/all.hpp>
#include <symflow/io/json.hpp>

#include "fuzz_support.hpp"

using symflow_fuzz::must_succeed;
using symflow_fuzz::report_bug;

namespace {

void put_le(std::vector<unsigned char>& bytes, std::size_t at, std::uint64_t v, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i) bytes[at + i] = static_cast<unsigned char>(v >> (8 * i));
}

void check(const std::vector<unsigned char>& file) {
  symflow::graph g;
  if (!symflow_fuzz::loads([&] { g = symflow::load_graph_binary(file); })) return;

  must_succeed("binary round trip", [&] {
    const symflow::graph_save_options as_read{.embed_parameters = (file[12] & 1) != 0};
    const auto saved = symflow::save_graph_binary(g, as_read);
    if (saved != file) report_bug("save_graph_binary(load_graph_binary(file)) differs from the file");
    if (!(symflow::load_graph_binary(saved) == g)) report_bug("binary reload differs from the first load");
  });
  must_succeed("JSON round trip", [&] {
    // JSON keeps no NaN payloads, so compare JSON text with JSON text rather than graphs.
    const std::string text = symflow::save_graph_json(g);
    if (symflow::save_graph_json(symflow::load_graph_json(text)) != text)
      report_bug("JSON save -> load -> save changed the text of a graph read from binary");
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<unsigned char> file(data, data + size);
  check(file);
  if (file.size() >= symflow::graph_binary_header_size) {
    const std::size_t payload = file.size() - symflow::graph_binary_header_size;
    const auto original = file;
    put_le(file, 16, payload, 8);
    put_le(file, 24, symflow::detail::crc32(file.data() + symflow::graph_binary_header_size, payload), 4);
    if (file != original) check(file);
  }
  return 0;
}
