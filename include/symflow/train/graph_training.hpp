#pragma once
// Training a model that is a graph value — one imported from ONNX (runtime/onnx_import.hpp), loaded
// from a file, or built at run time — with the same optimisers and checkpoints as a typed model.
// Its parameters live in a params store, keyed by their names in the graph, so `save_checkpoint`,
// `load_checkpoint`, `to_onnx(g, &store)` and `run_graph(g, feeds, &store)` all read the same values:
//
//   graph model = load_onnx("cnn.onnx");                       // logits of images
//   params weights = parameter_values(model);                  // its initialisers
//   graph_builder b(model);
//   graph_handle labels = b.input("labels", dtype::i64, {unknown_extent});
//   graph loss = b.build({classification_loss(b.handle(b.outputs().at(0).id), labels)});
//   graph_training_step step(loss, parameter_names(model));
//   adam opt({.learning_rate = 1e-4});
//   params state = opt.initial_state(weights, step.parameters());
//   for (...) { step.run(feeds, weights); opt.step(weights, state, step.gradients()); }
//
// The gradient program is derived once (runtime/grad.hpp's differentiate) and its interpreter plan
// built once; each step reuses the outputs' storage (interpreter::run_into).
#include <cstring>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../core/params.hpp"
#include "../runtime/builder.hpp"
#include "../runtime/grad.hpp"
#include "../runtime/interpreter.hpp"
#include "named_parameters.hpp"

namespace symflow {

// The names of g's parameters, in the graph's order.
inline std::vector<std::string> parameter_names(const graph& g) {
  std::vector<std::string> names;
  for (const graph_leaf& p : g.parameters) names.push_back(p.name);
  return names;
}

// The values embedded in g's parameters (an imported model's initialisers) as a params store;
// value_error naming a parameter that has none.
inline params parameter_values(const graph& g) {
  params store;
  for (const graph_leaf& p : g.parameters) {
    if (!p.value) throw value_error("parameter_values: parameter '" + p.name + "' has no value in the graph");
    const graph_tensor& v = *p.value;
    params::entry e{v.type, std::vector<std::size_t>(v.extents.begin(), v.extents.end()),
                    aligned_buffer<unsigned char>(v.bytes.size())};
    if (!v.bytes.empty()) std::memcpy(e.bytes.data(), v.bytes.data(), v.bytes.size());
    store.set_entry(p.name, std::move(e));
  }
  return store;
}

// mean(softmax_cross_entropy(logits, labels)): the classification loss of logits [N, K] against
// integer labels [N] (negative labels are padding), built onto the graph the handles belong to.
inline graph_handle classification_loss(const graph_handle& logits, const graph_handle& labels) {
  const graph_handle per_example = logits.builder->apply(ops::softmax_cross_entropy_op::name, {logits, labels});
  return reduce_value(ops::mean_op{}, per_example, {}, false);
}

// One training step of a graph whose first output is a scalar loss: the loss and its gradients
// with respect to the named parameters, evaluated with the parameters read from a params store.
// The graph's other outputs (the logits, for a running accuracy) come from the same evaluation.
class graph_training_step {
 public:
  graph_training_step(const graph& loss, std::vector<std::string> parameters)
      : parameters_(std::move(parameters)), outputs_of_loss_(checked_outputs(loss)), program_(differentiate(loss, parameters_)) {}

  const std::vector<std::string>& parameters() const { return parameters_; }
  const graph& program() const { return program_.source(); }

  // Evaluates the loss and the gradients for feeds; returns the loss.
  double run(const runtime_feeds& feeds, const params& model) {
    program_.run_into(outputs_, feeds, &model);
    gradients_.clear();
    for (std::size_t k = 0; k < parameters_.size(); ++k) {
      const runtime_tensor& g = outputs_.at(outputs_of_loss_ + k);
      gradients_.push_back({parameters_[k], g.type(), g.extents(), g.bytes()});
    }
    const runtime_tensor& loss = outputs_.at(0);
    if (loss.size() != 1) throw shape_error("graph_training_step: the loss is " + loss.type_string() + ", not a scalar");
    if (loss.type() == dtype_v<float>) return loss.data<float>()[0];
    if (loss.type() == dtype_v<double>) return loss.data<double>()[0];
    throw value_error("graph_training_step: the loss is " + loss.type_string() + ", not f32 or f64");
  }
  // The last run's gradients, in the order of parameters(), for an optimiser's step.
  const std::vector<named_gradient>& gradients() const { return gradients_; }
  // The last run's value of the loss graph's output k (0: the loss).
  const runtime_tensor& output(std::size_t k) const {
    if (k >= outputs_of_loss_) throw value_error("graph_training_step: the loss graph has no output " + std::to_string(k));
    return outputs_.at(k);
  }

 private:
  static std::size_t checked_outputs(const graph& g) {
    if (g.outputs.empty()) throw value_error("graph_training_step: the loss graph has no output");
    return g.outputs.size();
  }

  std::vector<std::string> parameters_;
  std::size_t outputs_of_loss_;
  interpreter program_;
  std::vector<runtime_tensor> outputs_;
  std::vector<named_gradient> gradients_;
};

}  // namespace symflow
