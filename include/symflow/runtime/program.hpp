#pragma once
// A graph value run as the kernel of one typed node (runtime/program_gradient.hpp): the typed node
// lists the program's operands (the leaves of a loss, and adjoints flowing into it), the program
// is the graph that computes from them, run by the interpreter. This is how the gradient of a large
// model is computed: its graph is built and differentiated at run time, once, by the ops' runtime
// rules, so the compiler instantiates only the forward model's lowering, not a term type per
// adjoint (docs/design.md, "Gradients of large models"). The members that build and run programs
// are program_impl.hpp: compiled once per program under SYMFLOW_SEPARATE_COMPILATION
// (core/separate_compilation.hpp, SYMFLOW_LIBRARY_PART_PROGRAMS).
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../core/separate_compilation.hpp"
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
                  dtype type);

  const graph& source() const noexcept { return interpreter_.source(); }
  const std::vector<std::string>& operand_names() const noexcept { return names_; }
  const std::vector<std::size_t>& output_sources() const noexcept { return sources_; }
  // Per leaf of source() (inputs, then parameters): the operand that gives its value.
  const std::vector<std::size_t>& leaf_operands() const noexcept { return leaf_operand_; }
  dtype type() const noexcept { return type_; }

  // Elements of every output, one after another, for operands of these element counts.
  std::size_t flat_size(const std::size_t* operand_elements, std::size_t operands) const;

  // Runs the graph on the operands where they lie and writes its outputs, flattened and one after
  // another, to `out` (flat_size elements of type()): each is computed there, not copied. One run
  // at a time per program: the interpreter keeps its intermediates' storage between runs.
  // `elsewhere`, when given, has one entry per output: where not null, that output is written
  // there instead (its place in `out` is left as it was).
  void run(void* out, const std::vector<bound_leaf>& operands, const std::vector<void*>& elsewhere = {}) const;

  // The program for the adjoints of sum(output * gbar) with respect to each floating operand: its
  // operands are this program's and gbar (shaped like the output, appended last); output 0 is that
  // sum, output 1 + j the adjoint of the j-th floating operand. What a gradient of this program's
  // output flows back through; built once per output.
  std::shared_ptr<const runtime_program> vjp(std::size_t output) const;

  // The program for the tangent of `output` (J t, shaped like it) given a tangent of each floating
  // operand: its operands are vjp(output)'s (the last, gbar, is not read) and then one tangent per
  // floating operand, in order; output 1 is J t. Built by differentiating the VJP, which is linear in
  // gbar, with respect to gbar: d/dgbar sum_j <vjp_j(gbar), t_j> = J t.
  std::shared_ptr<const runtime_program> jvp(std::size_t output) const;

  // Indices of the floating operands, the ones a VJP yields adjoints for.
  std::vector<std::size_t> floating_operands() const;
  // An operand's graph type (an operand the graph does not read is taken as a scalar of type()).
  graph_type operand_graph_type(std::size_t k) const;

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
  static graph_handle dot(graph_builder& b, const graph_handle& out, const graph_handle& gbar);
  std::shared_ptr<const runtime_program> make_vjp(std::size_t output) const;
  // back: the VJP program (operands: this program's, then gbar; outputs: the dot, then the adjoints).
  std::shared_ptr<const runtime_program> make_jvp(const runtime_program& back) const;

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
SYMFLOW_LIBRARY_LINKAGE std::shared_ptr<const runtime_program> gradient_program(const graph& forward,
                                                                         std::vector<std::string> operand_names,
                                                                         const std::vector<std::size_t>& wrt);

}  // namespace symflow

#if !SYMFLOW_LIBRARY_PROGRAMS_DECLARED_ONLY
#include "program_impl.hpp"
#endif
