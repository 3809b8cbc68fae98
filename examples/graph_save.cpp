// One half of the example pair: the model of graph_model.hpp, defined as a C++ type, saved as a
// graph value (its loss and logits, with seeded parameter values embedded) in the binary form.
// graph_load.cpp runs and differentiates the file without ever seeing the type.
//   graph_save model.sfg
#include <cstdio>
#include <exception>
#include <symflow/graph/all.hpp>

#include "graph_model.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: graph_save OUT.sfg\n");
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
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph_save: %s\n", e.what());
    return 1;
  }
}
