// libFuzzer target: the ONNX importer (runtime/onnx_import.hpp) on arbitrary bytes parsed as a
// ModelProto, with small limits so that a hostile size cannot take the fuzzer's memory. An accepted
// model must pass the graph value's validation, survive the binary form unchanged, and run on the
// interpreter with zero feeds of its inputs' extents, or refuse them with a symflow::error.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <symflow/io/binary.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/runtime/onnx_import.hpp>

#include "fuzz_support.hpp"

using symflow_fuzz::must_succeed;
using symflow_fuzz::report_bug;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, int(size))) return 0;
  symflow::onnx_import_limits limits;
  limits.max_nodes = 256;
  limits.max_tensor_bytes = 1 << 16;
  limits.max_rank = 6;
  symflow::graph g;
  if (!symflow_fuzz::loads([&] { g = symflow::from_onnx(model, limits); })) return 0;

  must_succeed("binary round trip of an imported graph", [&] {
    const symflow::graph back = symflow::load_graph_binary(symflow::save_graph_binary(g));
    if (!(back == g)) report_bug("load_graph_binary(save_graph_binary(g)) != g");
  });
  // Running it: zero feeds with unknown extents as 1, when every value is small enough to bound the
  // work (a valid model may be large: that is not the importer's bug).
  const auto small = [](const symflow::graph_type& t) {
    std::size_t n = 1;
    for (auto x : t.shape) {
      n *= x < 0 ? 1 : std::size_t(x);
      if (n > (1u << 16)) return false;
    }
    return true;
  };
  for (const auto& node : g.nodes)
    if (!small(node.type)) return 0;
  symflow::runtime_feeds feeds;
  std::size_t elements = 0;
  for (const auto& leaf : g.inputs) {
    symflow::runtime_extents e;
    for (auto x : leaf.type.shape) e.push_back(x < 0 ? 1 : std::size_t(x));
    symflow::runtime_tensor t(leaf.type.type, e);
    elements += t.size();
    if (t.byte_size()) std::memset(t.bytes(), 0, t.byte_size());
    feeds.insert_or_assign(leaf.name, std::move(t));
  }
  if (elements > (1u << 16)) return 0;
  symflow_fuzz::loads([&] { (void)symflow::run_graph(g, feeds); });
  return 0;
}
