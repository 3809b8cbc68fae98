#pragma once
// Evaluators whose value is computed into memory in prepare() and then read as a leaf: inner
// reductions, values made of reductions alone, views of computed values, kernels.
#include <cstring>
#include <utility>

#include "../../core/gemm.hpp"
#include "node_evaluators.hpp"

namespace symflow::cpu {

template <class Node, class C>
struct reduction_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  using reduced_node = Node;
  using Op = typename Node::op_type;
  C operand;
  const Node* node;
  std::size_t reduced_count = 1;

  reduction_eval(C c, const Node& n) : operand(std::move(c)), node(&n) {
    this->extents = reduction_result_extents<Node>(operand.extents, reduced_count);
  }
  template <class Ctx>
  void compute_into(T* out, Ctx& ctx) {
    operand.prepare(ctx);
    const frame f = frame::of<C::rank>(operand.extents);
    // Output offset per operand axis: 0 where reduced, else the output stride of that axis.
    const auto out_strides = row_major_strides<Node::rank>(this->extents);
    frame_strides in_frame{};
    for (std::size_t i = 0, j = 0; i < C::rank; ++i) {
      if (Node::mask[i]) {
        in_frame[i] = 0;
        if (Node::keep_dims) ++j;
      } else {
        in_frame[i] = out_strides[j++];
      }
    }
    run_reduce<Op, T>(operand, f, in_frame, out, element_count<Node::rank>(this->extents), reduced_count);
    ++counters().reductions;
  }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    this->prepare_shared(*node, ctx, [&](T* out) { compute_into(out, ctx); });
  }
};

// An elementwise value of reductions and scalars alone (the log of a sum, rsqrt of a variance plus
// epsilon): computed once per reduced element into memory, where fusing it into its user would
// compute it once per element of the user (a log per element of every row in log_softmax).
template <class Node, class Inner>
struct small_map_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  Inner inner;
  const Node* node;
  small_map_eval(Inner i, const Node& n) : inner(std::move(i)), node(&n) { this->extents = inner.extents; }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    this->prepare_shared(*node, ctx, [&](T* out) {
      inner.prepare(ctx);
      run_map<T, Inner, false>(inner, frame::of<Node::rank>(inner.extents), out);
    });
  }
};

template <class Node, class C>
struct view_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  C operand;
  typename Node::op_type op;
  view_eval(C c, const Node& node) : operand(std::move(c)), op(node.op) {
    this->extents = op.infer_extents(describe_later(node), operand.extents);
  }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    if (this->result.data) return;
    constexpr std::size_t RI = C::rank, RO = Node::rank;
    const leaf_eval<T> in = materialize(operand, ctx, Node::op_type::contiguous_operand);
    layout<RI> l{detail::as_extents<RI>(in.extents), detail::as_extents<RI>(in.strides), 0};
    const layout<RO> out = op.apply(l);
    this->result = leaf_eval<T>::template of<RO>(in.data + out.offset, out.extents, out.strides);
  }
};

template <class Node, class... C>
struct kernel_eval : materialised_base<typename Node::value_type, Node::rank> {
  using T = typename Node::value_type;
  plain_tuple<C...> operands;
  typename Node::op_type op;
  const Node* node;
  kernel_eval(const Node& n, C... c) : operands{{{std::move(c)}...}}, op(n.op), node(&n) {
    this->extents = apply_plain([&](const auto&... o) { return op.infer_extents(describe_later(n), o.extents...); },
                               operands);
  }
  template <std::size_t I, class Ctx>
  auto operand_view(Ctx& ctx) {
    auto& o = get<I>(operands);
    using C_I = std::remove_cvref_t<decltype(o)>;
    using V = typename C_I::value_type;
    if constexpr (!detail::reads_operand<typename Node::op_type, I>()) {
      return tensor_view<const V, dyn_shape<C_I::rank>>(nullptr, o.extents);
    } else if constexpr (C_I::rank == 2 && requires { Node::op_type::strided_matrix_operands; }) {
      // A matrix the op reads row- or column-major where it lies (a transposed view); copied
      // contiguous only when it is neither (a broadcast, a strided slice).
      const leaf_eval<V> leaf = materialize(o, ctx, false);
      strided_matrix<const V> layout;
      if (matrix_layout<const V>(leaf.data, leaf.extents[0], leaf.extents[1], leaf.strides[0], leaf.strides[1], layout))
        return leaf.template view<2>();
      return materialize(o, ctx, true).template view<2>();
    } else {
      return materialize(o, ctx, Node::op_type::contiguous_operands).template view<C_I::rank>();
    }
  }
  // This kernel's value is one output of a multi-output kernel (an op with destination(): the
  // source and the output's index), and `out` is where the evaluation's result goes: the source
  // may write it there (eval/output_destination.hpp). Asked before anything is computed.
  template <class Ctx>
  void want_at(T* out, Ctx& ctx) {
    if constexpr (requires { op.destination(); ctx.destinations; }) {
      const auto [source, index] = op.destination();
      ctx.destinations.push_back({source, index, out, false});
    }
  }
  template <class Ctx>
  void compute_into(T* out, Ctx& ctx) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      const auto views = make_plain_tuple(operand_view<I>(ctx)...);  // the source runs first
      const tensor_view<T, dyn_shape<Node::rank>> result(out, this->extents);
      if constexpr (requires { op.destination(); ctx.destinations; }) {
        const auto [source, index] = op.destination();
        if (const output_destination* d = written_destination(ctx.destinations, source, index)) {
          // Already in a result tensor: that is where this value is read from.
          if (d->data != out && result.size()) std::memcpy(out, d->data, result.size() * sizeof(T));
          return;
        }
      }
      if constexpr (requires { Node::op_type::writes_destinations; ctx.destinations; })
        op.template run_cpu_to<T>(result, ctx.destinations, get<I>(views)...);
      else
        op.template run_cpu<T>(result, get<I>(views)...);
    }(std::index_sequence_for<C...>{});
    ++counters().kernels;
  }
  template <class Ctx>
  void prepare(Ctx& ctx) {
    this->prepare_shared(*node, ctx, [&](T* out) { compute_into(out, ctx); });
  }
};

}  // namespace symflow::cpu
