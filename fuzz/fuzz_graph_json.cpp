// libFuzzer target: load_graph_json on arbitrary text. An accepted graph must survive
// save -> load -> save unchanged (JSON and binary), since both writers are deterministic.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <symflow/graph/all.hpp>
#include <symflow/io/json.hpp>

#include "fuzz_support.hpp"

using symflow_fuzz::must_succeed;
using symflow_fuzz::report_bug;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  symflow::graph g;
  if (!symflow_fuzz::loads([&] { g = symflow::load_graph_json(text); })) return 0;

  must_succeed("JSON round trip", [&] {
    const std::string saved = symflow::save_graph_json(g);
    const symflow::graph back = symflow::load_graph_json(saved);
    // JSON canonicalises NaNs on the first load already, so the reloaded graph equals the first bit for bit.
    if (!(back == g)) report_bug("load_graph_json(save_graph_json(g)) != g");
    if (symflow::save_graph_json(back) != saved) report_bug("JSON save -> load -> save changed the text");
  });
  must_succeed("binary round trip", [&] {
    const auto bytes = symflow::save_graph_binary(g);
    const symflow::graph back = symflow::load_graph_binary(bytes);
    if (!(back == g)) report_bug("load_graph_binary(save_graph_binary(g)) != g for a graph read from JSON");
    if (symflow::save_graph_binary(back) != bytes) report_bug("binary save -> load -> save changed the bytes");
  });
  return 0;
}
