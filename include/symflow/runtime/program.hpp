#pragma once
// A graph value run as the kernel of one typed node (runtime/program_gradient.hpp): the typed node
// lists the program's operands (the leaves of a loss, and adjoints flowing into it), the program
// is the graph that computes from them, run by the interpreter. This is how the gradient of a large
// model is computed: its graph is built and differentiated at run time, once, by the ops' runtime
// rules, so the compiler instantiates only the forward model's lowering, not a term type per
// adjoint (docs/design.md, "Gradients of large models").
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "builder.hpp"
#include "feeds.hpp"
#include "grad.hpp"
#include "interpreter.hpp"

namespace symflow {

class runtime_program {
 public:
  // Where an output's extents come from: operand k's (an adjoint is shaped like its operand), or
  // none (a scalar).
  static constexpr std::size_t scalar_output = std::size_t(-1);

  // `source`'s inputs and parameters are each named like one operand (operand_names, in the order
  // the typed node lists its operands); output k has the extents of operand output_sources[k].
  // Every output has dtype `type`.
  runtime_program(graph source, std::vector<std::string> operand_names, std::vector<std::size_t> output_sources,
                  dtype type)
      : names_(std::move(operand_names)), sources_(std::move(output_sources)), type_(type),
        interpreter_(std::move(source)) {
    const graph& g = interpreter_.source();
    if (g.outputs.size() != sources_.size())
      throw graph_error("runtime_program: " + std::to_string(g.outputs.size()) + " outputs, " +
                        std::to_string(sources_.size()) + " output shapes");
    for (const auto* list : {&g.inputs, &g.parameters})
      for (const auto& leaf : *list) {
        std::size_t k = 0;
        while (k < names_.size() && names_[k] != leaf.name) ++k;
        if (k == names_.size()) throw graph_error("runtime_program: leaf '" + leaf.name + "' is no operand");
        leaf_operand_.push_back(k);
      }
    for (std::size_t i = 0; i < g.outputs.size(); ++i) {
      const graph_type t = value_type_in(g, g.outputs[i]);
      if (t.type != type_)
        throw graph_error("runtime_program: output " + std::to_string(i) + " is " + graph_type_string(t) + ", not " +
                          std::string(dtype_name(type_)));
    }
  }

  const graph& source() const noexcept { return interpreter_.source(); }
  const std::vector<std::string>& operand_names() const noexcept { return names_; }
  const std::vector<std::size_t>& output_sources() const noexcept { return sources_; }
  // Per leaf of source() (inputs, then parameters): the operand that gives its value.
  const std::vector<std::size_t>& leaf_operands() const noexcept { return leaf_operand_; }
  dtype type() const noexcept { return type_; }

  // Elements of every output, one after another, for operands of these element counts.
  std::size_t flat_size(const std::size_t* operand_elements, std::size_t operands) const {
    std::size_t total = 0;
    for (auto s : sources_) {
      if (s != scalar_output && s >= operands)
        throw value_error("program: an output is the adjoint of operand " + std::to_string(s) + " of " +
                          std::to_string(operands));
      total += s == scalar_output ? 1 : operand_elements[s];
    }
    return total;
  }

  // Runs the graph on the operands where they lie and writes its outputs, flattened and one after
  // another, to `out` (flat_size elements of type()): each is computed there, not copied. One run
  // at a time per program: the interpreter keeps its intermediates' storage between runs.
  // `elsewhere`, when given, has one entry per output: where not null, that output is written
  // there instead (its place in `out` is left as it was).
  void run(void* out, const std::vector<bound_leaf>& operands, const std::vector<void*>& elsewhere = {}) const {
    std::vector<bound_leaf> leaves;
    leaves.reserve(leaf_operand_.size());
    for (auto k : leaf_operand_) leaves.push_back(operands.at(k));
    // Each output has the extents the typed node made room for (flat_size).
    std::vector<output_target> targets;
    targets.reserve(sources_.size());
    auto* bytes = static_cast<unsigned char*>(out);
    for (std::size_t k = 0; k < sources_.size(); ++k) {
      const std::size_t source = sources_[k];
      output_target t{type_, source == scalar_output ? runtime_extents{} : operands.at(source).extents, bytes};
      bytes += element_count(t.extents) * dtype_size(type_);
      if (k < elsewhere.size() && elsewhere[k]) t.data = elsewhere[k];
      targets.push_back(std::move(t));
    }
    std::lock_guard lock(mutex_);
    interpreter_.run_bound_into(targets, leaves);
  }

  // The program for the adjoints of sum(output * gbar) with respect to each floating operand: its
  // operands are this program's and gbar (shaped like the output, appended last); output 0 is that
  // sum, output 1 + j the adjoint of the j-th floating operand. What a gradient of this program's
  // output flows back through; built once per output.
  std::shared_ptr<const runtime_program> vjp(std::size_t output) const {
    std::lock_guard lock(mutex_);
    auto& cached = vjps_[output];
    if (!cached) cached = make_vjp(output);
    return cached;
  }

  // The program for the tangent of `output` (J t, shaped like it) given a tangent of each floating
  // operand: its operands are vjp(output)'s (the last, gbar, is not read) and then one tangent per
  // floating operand, in order; output 1 is J t. Built by differentiating the VJP, which is linear in
  // gbar, with respect to gbar: d/dgbar sum_j <vjp_j(gbar), t_j> = J t.
  std::shared_ptr<const runtime_program> jvp(std::size_t output) const {
    const auto back = vjp(output);
    std::lock_guard lock(mutex_);
    auto& cached = jvps_[output];
    if (!cached) cached = make_jvp(*back);
    return cached;
  }

  // Indices of the floating operands, the ones a VJP yields adjoints for.
  std::vector<std::size_t> floating_operands() const {
    std::vector<std::size_t> out;
    for (std::size_t k = 0; k < names_.size(); ++k) {
      const dtype t = operand_type(k);
      if (is_floating_dtype(t)) out.push_back(k);
    }
    return out;
  }
  // An operand's graph type (an operand the graph does not read is taken as a scalar of type()).
  graph_type operand_graph_type(std::size_t k) const {
    const graph& g = source();
    for (const auto* list : {&g.inputs, &g.parameters})
      for (const auto& leaf : *list)
        if (leaf.name == names_.at(k)) return leaf.type;
    return graph_type{type_, {}};
  }

  // The type of value `id` of graph g.
  static graph_type value_type_in(const graph& g, std::uint32_t id) {
    const std::size_t leaves = g.inputs.size() + g.parameters.size();
    if (id < g.inputs.size()) return g.inputs[id].type;
    if (id < leaves) return g.parameters[id - g.inputs.size()].type;
    if (id < leaves + g.constants.size()) return g.constants[id - leaves].type;
    return g.nodes.at(id - g.first_node_id()).type;
  }

  // The name a non-leaf operand takes in a program's graph (no leaf of a typed model has it: leaf
  // names are identifiers).
  static std::string operand_name(std::size_t k) { return "operand:" + std::to_string(k); }

 private:
  dtype operand_type(std::size_t k) const { return operand_graph_type(k).type; }


  // sum(out * gbar) over all of out's axes.
  static graph_handle dot(graph_builder& b, const graph_handle& out, const graph_handle& gbar) {
    graph_handle p = b.apply(ops::mul_op::name, {out, gbar});
    if (p.rank() == 0) return p;
    std::vector<std::int64_t> axes(p.rank());
    for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = std::int64_t(i);
    return b.apply(ops::sum_op::name, {p}, {{"axes", axes}, {"keepdims", false}});
  }

  std::shared_ptr<const runtime_program> make_vjp(std::size_t output) const {
    graph_builder b(source());
    const graph_handle out = b.outputs().at(output);
    std::vector<std::string> names = names_;
    names.push_back(operand_name(names_.size()));
    const graph_type t = out.type();
    const graph_handle gbar = b.input(names.back(), t.type, t.shape);
    const graph loss = b.build({dot(b, out, gbar)});
    std::vector<std::string> wrt;
    std::vector<std::size_t> sources{scalar_output};
    for (auto k : floating_operands()) {
      wrt.push_back(names_[k]);
      sources.push_back(k);
    }
    return std::make_shared<const runtime_program>(differentiate(loss, wrt), std::move(names), std::move(sources), type_);
  }

  // back: the VJP program (operands: this program's, then gbar; outputs: the dot, then the adjoints).
  std::shared_ptr<const runtime_program> make_jvp(const runtime_program& back) const {
    graph_builder b(back.source());
    std::vector<std::string> names = back.operand_names();
    const std::vector<std::size_t> floating = floating_operands();
    std::optional<graph_handle> total;
    for (std::size_t j = 0; j < floating.size(); ++j) {
      names.push_back(operand_name(names.size()));
      const graph_type t = operand_graph_type(floating[j]);
      const graph_handle tangent = b.input(names.back(), t.type, t.shape);
      const graph_handle term = dot(b, b.outputs().at(1 + j), tangent);
      total = total ? b.apply(ops::add_op::name, {*total, term}) : term;
    }
    const std::string gbar = back.operand_names().back();
    if (!total) {  // no floating operand: the tangent is zero
      total = b.literal(0.0, type_);
    }
    const graph dotted = b.build({*total});
    const std::size_t gbar_operand = back.operand_names().size() - 1;
    return std::make_shared<const runtime_program>(differentiate(dotted, {gbar}), std::move(names),
                                                   std::vector<std::size_t>{scalar_output, gbar_operand}, type_);
  }

  std::vector<std::string> names_;
  std::vector<std::size_t> sources_;
  dtype type_;
  std::vector<std::size_t> leaf_operand_;  // per graph leaf (inputs, then parameters): its operand
  interpreter interpreter_;
  mutable std::mutex mutex_;
  mutable std::map<std::size_t, std::shared_ptr<const runtime_program>> vjps_, jvps_;
};

namespace runtime_detail {
// Gradient programs by forward graph (structure and constants' data), operand names and
// differentiated operands: a training step that builds value_and_grad afresh every iteration (as
// written naturally) gets the same program back, whose interpreter keeps its plan, its outputs'
// storage and its intermediates' (buffer_pool.hpp) from the last step. Few entries: each keeps
// about the peak of its run's intermediates.
struct cached_program {
  graph forward;
  std::vector<std::string> operand_names;
  std::vector<std::size_t> wrt;
  std::shared_ptr<const runtime_program> program;
};
inline graph_lru_cache<cached_program>& program_cache() {
  static graph_lru_cache<cached_program>* cache = new graph_lru_cache<cached_program>(8);  // never destroyed
  return *cache;
}
}  // namespace runtime_detail

// The program computing the loss (output 0) of the graph `forward` and its gradient with respect to
// the operands listed in `wrt` (outputs 1, 2, ...). `operand_names` name forward's leaves. The same
// program object for a forward graph of the same structure, names and constants (program_cache()):
// programs run one at a time, so threads evaluating gradients of the same model take turns.
inline std::shared_ptr<const runtime_program> gradient_program(const graph& forward, std::vector<std::string> operand_names,
                                                               const std::vector<std::size_t>& wrt) {
  using runtime_detail::program_cache;
  structure_hasher h;
  h.add(graph_structure_hash(forward));
  for (const auto& n : operand_names) h.add(n);
  for (auto k : wrt) h.add(std::uint64_t(k));
  const std::uint64_t key = h.value();
  if (auto hit = program_cache().find(key, [&](const runtime_detail::cached_program& e) {
        return e.operand_names == operand_names && e.wrt == wrt && e.forward == forward;
      }))
    return hit->program;

  std::vector<std::string> names;
  std::vector<std::size_t> sources{runtime_program::scalar_output};
  for (auto k : wrt) {
    names.push_back(operand_names.at(k));
    sources.push_back(k);
  }
  const dtype type = forward.outputs.empty() ? dtype::f32 : runtime_program::value_type_in(forward, forward.outputs[0]).type;
  auto program = std::make_shared<const runtime_program>(differentiate(forward, names), operand_names,
                                                         std::move(sources), type);
  program_cache().insert(key, std::make_shared<const runtime_detail::cached_program>(
                                  runtime_detail::cached_program{forward, std::move(operand_names), wrt, program}));
  return program;
}

}  // namespace symflow
