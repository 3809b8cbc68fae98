#pragma once
// An example's trained model as files that other programs check it by (--export DIR; checked by
// examples/graph_round_trip.cmake): DIR/model.json, the graph with the trained parameters in it;
// DIR/feed_<input>.npy, a value for each of its inputs; DIR/expected.npy, what the example computed
// for them.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <symflow/io/json.hpp>
#include <symflow/io/npy.hpp>
#include <symflow/ir/to_graph.hpp>

namespace symflow::examples {

inline void write_export(const std::filesystem::path& dir, symflow::graph model, const symflow::params& trained,
                         const std::vector<std::pair<std::string, symflow::graph_tensor>>& feeds,
                         const symflow::graph_tensor& expected) {
  std::filesystem::create_directories(dir);
  symflow::embed_parameters(model, trained);
  symflow::save_graph_json_file((dir / "model.json").string(), model);
  for (const auto& [name, value] : feeds) symflow::save_npy((dir / ("feed_" + name + ".npy")).string(), value);
  symflow::save_npy((dir / "expected.npy").string(), expected);
}

}  // namespace symflow::examples
