#pragma once
// Evaluators of the nodes that cannot fuse into their consumer's kernel: reductions, kernel ops, and
// views (of memory, or of a value computed first). prepare() materialises each once per evaluation,
// and the group that uses it reads it as a leaf; a reduction or kernel op at the root of an
// evaluation computes straight into the output instead.
#include <array>
#include <cstddef>
#include <string>
#include <tuple>
#include <utility>

#include <symflow/core/tensor.hpp>
#include <symflow/expr/reduction.hpp>
#include <symflow/expr/structural.hpp>

#include "device.hpp"
#include "device_leaf.hpp"
#include "elementwise_evaluator.hpp"  // reads_operand
#include "evaluation_context.hpp"
#include "node_labels.hpp"

namespace symflow::cuda {
namespace detail {

// The fusion-group runners (fusion_groups.hpp, which needs these evaluators): a materialised value is
// computed by running its operand's group.
template <class Ctx, class T, class H>
void run_map(H& root, Ctx& ctx, T* out);

// Evaluators whose value is materialised: after prepare() they read as a leaf.
template <class T, std::size_t R>
struct materialised_base {
  using value_type = T;
  static constexpr std::size_t rank = R;
  extents_t<R> extents{};
  device_leaf<T> result;
  bool ready = false;
  node_ref source{};
  const device_leaf<T>& as_leaf() const { return result; }
  void bind(const group_frame& f) { result.bind(f); }
  template <class F>
  void visit(F&& f) {
    result.template visit<R == 0>(f);
  }
  template <class F>
  void visit_reads(F&& f) const {
    result.visit_reads(f);
  }
  // Inside another group: a value another kernel computed.
  void describe(std::string& out) const {
    out += '[';
    out += source.text();
    out += ']';
  }
  template <int FR, class Keys>
  auto lower() const {
    return result.template lower<FR, R == 0>();
  }
  template <class Keys, int N, int FR>
  void fill_table(dev::leaf_table<N, FR>&) const {}
  void set_dense(const T* data) {
    result = device_leaf<T>::template of<R>(data, extents, row_major_strides<R>(extents));
    ready = true;
  }
  // Computes the value once per evaluation: an identical node met earlier is read instead.
  template <class Node, class Ctx, class Compute>
  void prepare_shared(const Node& node, Ctx& ctx, Compute&& compute) {
    if (ready) return;
    if (const shared_value* v = ctx.find_shared(node)) {
      result = device_leaf<T>::of_shared(*v);
      ready = true;
      return;
    }
    T* out = ctx.template allocate<T>(element_count<R>(extents));
    compute(out);
    set_dense(out);
    shared_value v;
    v.data = out;
    v.rank = R;
    v.extents = result.extents;
    v.strides = result.strides;
    ctx.remember(node, v);
  }
};

// Computes a child into device memory if it is not there already (contiguous if asked) and returns it
// as a leaf.
template <class C, class Ctx>
device_leaf<typename C::value_type> materialize(C& child, Ctx& ctx, bool contiguous) {
  using T = typename C::value_type;
  constexpr std::size_t R = C::rank;
  child.prepare(ctx);
  if constexpr (requires { child.as_leaf(); }) {
    const device_leaf<T> l = child.as_leaf();
    if (!contiguous || l.is_contiguous()) return l;
  }
  T* buffer = ctx.template allocate<T>(element_count<R>(child.extents));
  run_map(child, ctx, buffer);
  return device_leaf<T>::template of<R>(buffer, child.extents, row_major_strides<R>(child.extents));
}

template <class Op, class T, class Ctx, class H, std::size_t RI>
void run_reduce(H& operand, Ctx& ctx, const std::array<bool, RI>& mask, T* out, std::size_t out_size,
                std::size_t count, const node_ref& source);

template <class Node, class C>
struct reduction_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  using Op = typename Node::op_type;
  using node_type = Node;
  C operand;
  const Node* node;
  std::size_t reduced_count = 1;

  reduction_eval(C c, const Node& n) : operand(std::move(c)), node(&n) {
    this->extents = reduction_result_extents<Node>(operand.extents, reduced_count);
    this->source = ref_of(n);
  }
  template <class Ctx>
  void compute_into(T* out, Ctx& ctx) {
    operand.prepare(ctx);
    run_reduce<Op, T>(operand, ctx, Node::mask, out, element_count<Node::rank>(this->extents), reduced_count,
                      this->source);
  }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    this->prepare_shared(*node, ctx, [&](T* out) { compute_into(out, ctx); });
  }
  // As the root of an evaluation (computing into the output): what its kernel reads.
  template <class Ctx>
  void prepare_operands(Ctx& ctx) {
    operand.prepare(ctx);
  }
  template <class F>
  void visit_root_reads(F&& f) const {
    operand.visit_reads(f);
  }
};

template <class Node, class C>
struct view_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  C operand;
  typename Node::op_type op;
  view_eval(C c, const Node& node) : operand(std::move(c)), op(node.op) {
    this->extents = op.infer_extents(describe_later(node), operand.extents);
    this->source = ref_of(node);
  }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    if (this->ready) return;
    constexpr std::size_t RI = C::rank, RO = Node::rank;
    const device_leaf<T> in = materialize(operand, ctx, Node::op_type::contiguous_operand);
    const layout<RI> l{in.template extents_as<RI>(), in.template strides_as<RI>(), 0};
    const layout<RO> out = op.apply(l);
    this->result = device_leaf<T>::template of<RO>(in.data + out.offset, out.extents, out.strides);
    this->ready = true;
  }
  // A view of memory heading a group (a copy): it names what it views.
  void describe(std::string& out) const {
    out += this->source.text() + "(";
    operand.describe(out);
    out += ")";
  }
};

template <class Op>
struct kernel_impl;  // specialised in kernel_ops.hpp for the ops with a device implementation

template <class Node, class... C>
struct kernel_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  using Op = typename Node::op_type;
  std::tuple<C...> operands;
  Op op;
  const Node* node;
  kernel_eval(const Node& n, C... c) : operands(std::move(c)...), op(n.op), node(&n) {
    this->extents =
        std::apply([&](const auto&... o) { return op.infer_extents(describe_later(n), o.extents...); }, operands);
    this->source = ref_of(n);
  }
  template <class Ctx>
  void compute_into(T* out, Ctx& ctx);  // kernel_ops.hpp
  template <class Ctx>
  void prepare(Ctx& ctx) {
    this->prepare_shared(*node, ctx, [&](T* out) { compute_into(out, ctx); });
  }
  // Operands the op does not read (reduced_count's) are neither computed nor counted as read.
  template <class Ctx, std::size_t... I>
  void prepare_operands(Ctx& ctx, std::index_sequence<I...>) {
    ((reads_operand<Op, I>() ? std::get<I>(operands).prepare(ctx) : void()), ...);
  }
  template <class Ctx>
  void prepare_operands(Ctx& ctx) {
    prepare_operands(ctx, std::index_sequence_for<C...>{});
  }
  template <class F, std::size_t... I>
  void visit_root_reads(F&& f, std::index_sequence<I...>) const {
    ((reads_operand<Op, I>() ? std::get<I>(operands).visit_reads(f) : void()), ...);
  }
  template <class F>
  void visit_root_reads(F&& f) const {
    visit_root_reads(f, std::index_sequence_for<C...>{});
  }
  std::string operand_list() const {
    std::string s;
    std::apply([&](const auto&... o) { ((s += (s.empty() ? "" : ", "), o.describe(s)), ...); }, operands);
    return s;
  }
};

}  // namespace detail
}  // namespace symflow::cuda
