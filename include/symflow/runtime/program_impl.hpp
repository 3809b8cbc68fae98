#pragma once
// runtime_program's members that build, differentiate and run programs, and gradient_program
// (program.hpp), included there unless they are compiled once per program
// (core/separate_compilation.hpp, SYMFLOW_LIBRARY_PART_PROGRAMS): every unit whose model's
// gradient is a runtime program would otherwise compile the interpreter and the differentiation
// of graphs again.
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "program.hpp"

namespace symflow {

SYMFLOW_LIBRARY_LINKAGE runtime_program::runtime_program(graph source, std::vector<std::string> operand_names,
                                                         std::vector<std::size_t> output_sources, dtype type)
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

SYMFLOW_LIBRARY_LINKAGE std::size_t runtime_program::flat_size(const std::size_t* operand_elements,
                                                               std::size_t operands) const {
  std::size_t total = 0;
  for (auto s : sources_) {
    if (s != scalar_output && s >= operands)
      throw value_error("program: an output is the adjoint of operand " + std::to_string(s) + " of " +
                        std::to_string(operands));
    total += s == scalar_output ? 1 : operand_elements[s];
  }
  return total;
}

SYMFLOW_LIBRARY_LINKAGE void runtime_program::run(void* out, const std::vector<bound_leaf>& operands,
                                                  const std::vector<void*>& elsewhere) const {
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

SYMFLOW_LIBRARY_LINKAGE std::shared_ptr<const runtime_program> runtime_program::vjp(std::size_t output) const {
  std::lock_guard lock(mutex_);
  auto& cached = vjps_[output];
  if (!cached) cached = make_vjp(output);
  return cached;
}

SYMFLOW_LIBRARY_LINKAGE std::shared_ptr<const runtime_program> runtime_program::jvp(std::size_t output) const {
  const auto back = vjp(output);
  std::lock_guard lock(mutex_);
  auto& cached = jvps_[output];
  if (!cached) cached = make_jvp(*back);
  return cached;
}

SYMFLOW_LIBRARY_LINKAGE std::vector<std::size_t> runtime_program::floating_operands() const {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < names_.size(); ++k) {
    const dtype t = operand_type(k);
    if (is_floating_dtype(t)) out.push_back(k);
  }
  return out;
}

SYMFLOW_LIBRARY_LINKAGE graph_type runtime_program::operand_graph_type(std::size_t k) const {
  const graph& g = source();
  for (const auto* list : {&g.inputs, &g.parameters})
    for (const auto& leaf : *list)
      if (leaf.name == names_.at(k)) return leaf.type;
  return graph_type{type_, {}};
}

SYMFLOW_LIBRARY_LINKAGE graph_handle runtime_program::dot(graph_builder& b, const graph_handle& out,
                                                          const graph_handle& gbar) {
  graph_handle p = b.apply(ops::mul_op::name, {out, gbar});
  if (p.rank() == 0) return p;
  std::vector<std::int64_t> axes(p.rank());
  for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = std::int64_t(i);
  return b.apply(ops::sum_op::name, {p}, {{"axes", axes}, {"keepdims", false}});
}

SYMFLOW_LIBRARY_LINKAGE std::shared_ptr<const runtime_program> runtime_program::make_vjp(std::size_t output) const {
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

SYMFLOW_LIBRARY_LINKAGE std::shared_ptr<const runtime_program> runtime_program::make_jvp(
    const runtime_program& back) const {
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
  if (!total) {  // no floating operand: the tangent is zero
    total = b.literal(0.0, type_);
  }
  const graph dotted = b.build({*total});
  const std::size_t gbar_operand = back.operand_names().size() - 1;
  return std::make_shared<const runtime_program>(differentiate(dotted, {back.operand_names().back()}), std::move(names),
                                                 std::vector<std::size_t>{scalar_output, gbar_operand}, type_);
}

SYMFLOW_LIBRARY_LINKAGE std::shared_ptr<const runtime_program> gradient_program(const graph& forward,
                                                                         std::vector<std::string> operand_names,
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
