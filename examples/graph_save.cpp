// One half of the example pair: the model of graph_model.hpp, defined as a C++ type, saved as a
// graph value (its loss and logits, with seeded parameter values embedded) in the binary form.
// graph_load.cpp runs and differentiates the file without ever seeing the type.
//   graph_save model.sfg [--export DIR]
// --export DIR also writes the logits' graph with those parameters, a random batch and the typed
// model's logits for it (examples/export_files.hpp), for the ONNX round trip.
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <symflow/graph/all.hpp>

#include "export_files.hpp"
#include "graph_model.hpp"

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 4 && std::strcmp(argv[2], "--export") == 0)) {
    std::fprintf(stderr, "usage: graph_save OUT.sfg [--export DIR]\n");
    return 1;
  }
  try {
    const graph_example::model model;
    symflow::graph g = symflow::to_graph(model.loss(), model.logits());
    symflow::embed_parameters(g, graph_example::initial_parameters(2026));
    symflow::save_graph_binary_file(argv[1], g, {.embed_parameters = true});
    std::printf("saved %s: %zu inputs, %zu parameters, %zu nodes; outputs: loss %s, logits %s\n", argv[1],
                g.inputs.size(), g.parameters.size(), g.nodes.size(),
                symflow::graph_type_string(g.type_of(g.outputs[0])).c_str(),
                symflow::graph_type_string(g.type_of(g.outputs[1])).c_str());
    if (argc == 4) {
      using namespace symflow;
      tensor<float, shape<dyn, graph_example::features>> x({7, graph_example::features}, uninitialized);
      std::mt19937 rng(7);
      std::normal_distribution<float> normal;
      for (auto& v : x) v = normal(rng);
      const params p = graph_example::initial_parameters(2026);
      const auto logits = eval(model.logits(), model.x = x, p);
      symflow::examples::write_export(argv[3], to_graph(model.logits()), p, {{"x", runtime_tensor(x).to_graph_tensor()}},
                             runtime_tensor(logits).to_graph_tensor());
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph_save: %s\n", e.what());
    return 1;
  }
}
