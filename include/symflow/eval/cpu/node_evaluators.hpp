#pragma once
#include <string>
#include <tuple>
#include <utility>

#include "../../core/plain_tuple.hpp"
#include "../../expr/broadcast.hpp"
#include "../../expr/elementwise.hpp"
#include "../../expr/reduction.hpp"
#include "../../expr/rewrite.hpp"
#include "../../symbolic/traits.hpp"
#include "../../expr/structural.hpp"
#include "context.hpp"
#include "fused_loop.hpp"
#include "leaf_eval.hpp"

namespace symflow::cpu {

// Evaluators mirror the expression tree. Building them checks every runtime extent (before any
// work); prepare() then materialises what cannot fuse (kernels, views of computed values, inner
// reductions), after which the fused protocol (bind_frame / set_row / scalar / packet) reads them
// as leaves. Evaluators dispatch on node_kind only; everything op-specific comes from the op type.

template <expression E, class Ctx>
auto make_evaluator(const E& node, Ctx& ctx);

namespace detail {
template <class Op, class T, std::size_t N, class = std::make_index_sequence<N>>
inline constexpr bool has_packet = false;
template <class Op, class T, std::size_t N, std::size_t... I>
  requires std::is_floating_point_v<T>
inline constexpr bool has_packet<Op, T, N, std::index_sequence<I...>> = [] {
  if constexpr (requires { Op::template packet_dtype_ok<T>; })
    if constexpr (!Op::template packet_dtype_ok<T>) return false;
  return requires(const simd::packet_t<T>& p) { Op::packet(((void)I, p)...); };
}();

// Selects over packets. A bool node has no packets, but one whose op gives its value as lane masks
// over packets of U — a comparison of U operands (the op's mask_packet), or and / or / not of such
// masks (mask_of_masks) — can feed a select (where's select_packet) that runs on packets of U.
template <class E, class U>
inline constexpr bool masks_over_v = requires { requires E::template masks_over<U>; };
template <class Op, class U, class... C>
inline constexpr bool compares_packets_v =
    std::is_floating_point_v<U> && simd::vectorized<U> &&
    requires(const simd::packet_t<U>& p) { Op::mask_packet(((void)sizeof(C*), p)...); } &&
    ((C::vectorizable && std::is_same_v<typename C::value_type, U>) && ...);
template <class Op, class U, class... C>
inline constexpr bool combines_masks_v =
    std::is_floating_point_v<U> && simd::vectorized<U> &&
    requires(const simd::packet_t<U>& p) { Op::mask_of_masks(((void)sizeof(C*), p)...); } &&
    (masks_over_v<C, U> && ...);
template <class Op, class T, class... C>
inline constexpr bool selects_packets_v = false;
template <class Op, class T, class M, class A, class B>
  requires std::is_floating_point_v<T> && requires(const simd::packet_t<T>& p) { Op::select_packet(p, p, p); }
inline constexpr bool selects_packets_v<Op, T, M, A, B> =
    masks_over_v<M, T> && A::vectorizable && B::vectorizable && std::is_same_v<typename A::value_type, T> &&
    std::is_same_v<typename B::value_type, T>;

// Ops may leave an operand unread (expand_as uses its second operand for its extents only):
// such an operand is never prepared or bound, so nothing is computed for it.
template <class Op, std::size_t I>
constexpr bool reads_operand() {
  if constexpr (requires { Op::template reads_operand<I>; }) return Op::template reads_operand<I>;
  else return true;
}

template <std::size_t R>
extents_t<R> as_extents(const auto& e) {
  extents_t<R> out{};
  std::copy_n(e.begin(), R, out.begin());
  return out;
}
}  // namespace detail

// Computes a child into memory if it is not already there (contiguous if asked) and returns a leaf.
template <class C, class Ctx>
leaf_eval<typename C::value_type> materialize(C& child, Ctx& ctx, bool contiguous) {
  using T = typename C::value_type;
  constexpr std::size_t R = C::rank;
  child.prepare(ctx);
  if constexpr (requires { child.as_leaf(); }) {
    auto leaf = child.as_leaf();
    if (!contiguous || leaf.is_contiguous()) return leaf;
  }
  T* buffer = ctx.template allocate<T>(element_count<R>(child.extents));
  run_map<T>(child, frame::of<R>(child.extents), buffer);
  ++counters().fused_passes;
  return leaf_eval<T>::template of<R>(buffer, child.extents, row_major_strides<R>(child.extents));
}

// A value already in memory: a feed, a variable, a constant.
template <class T, std::size_t R>
struct memory_eval : leaf_eval<T> {
  static constexpr std::size_t rank = R;
  extents_t<R> extents{};
  memory_eval(const T* data, const extents_t<R>& e, const extents_t<R>& s)
      : leaf_eval<T>(leaf_eval<T>::template of<R>(data, e, s)), extents(e) {}
  template <class Ctx>
  void prepare(Ctx&) {}
  const leaf_eval<T>& as_leaf() const { return *this; }
  // A rank-0 tensor's strides are all 0 (they bind no collapse, and no pass needs to see them: a
  // pass of dense arrays and scalars is still dense).
  template <class F>
  void visit_strides(F&& f) {
    if constexpr (R > 0) leaf_eval<T>::visit_strides(f);
  }
  // A rank-0 tensor (an optimiser's scalars, a learning rate fed as a tensor) is a broadcast in
  // every frame: read it without the inner-stride tests of leaf_eval, which a fused update with
  // seven such scalars paid for in every packet. (The same element either way.)
  SYMFLOW_INLINE T scalar(std::size_t j) const {
    if constexpr (R == 0) return *this->data;
    else return leaf_eval<T>::scalar(j);
  }
  template <class P, bool Dense = false>
  SYMFLOW_INLINE P packet(std::size_t j) const {
    if constexpr (R == 0) return simd::pm::pset1<P>(*this->data);
    else return leaf_eval<T>::template packet<P, Dense>(j);
  }
};

template <class T>
struct literal_eval : scalar_eval<T> {
  static constexpr std::size_t rank = 0;
  extents_t<0> extents{};
  template <class Ctx>
  void prepare(Ctx&) {}
};

// Ops that cost more to recompute than to read back (exp, log, tanh, ...) declare `costly`.
template <class Op>
inline constexpr bool is_costly_op_v = requires { Op::costly; };

template <class Op, class T, std::size_t R, class... C>
struct elementwise_eval {
  using value_type = T;
  static constexpr std::size_t rank = R;
  // A select whose mask is a comparison of T packets (detail::selects_packets_v) runs on packets too.
  static constexpr bool selects = detail::selects_packets_v<Op, T, C...>;
  static constexpr bool vectorizable =
      selects || (detail::has_packet<Op, T, sizeof...(C)> && (C::vectorizable && ...) &&
                  (std::is_same_v<typename C::value_type, T> && ...));
  // For a bool node: whether its value comes as lane masks over packets of U (a select reads them).
  template <class U>
  static constexpr bool masks_over = std::is_same_v<T, bool> && (detail::compares_packets_v<Op, U, C...> ||
                                                                 detail::combines_masks_v<Op, U, C...>);
  // A transcendental op (one that declares `costly`) in the tree: fused loops step four packets
  // at a time (fused_loop.hpp, latency_bound_v).
  static constexpr bool latency_bound = is_costly_op_v<Op> || (detail::latency_bound_v<C> || ...);
  plain_tuple<C...> children;  // not std::tuple: see core/plain_tuple.hpp
  [[no_unique_address]] Op op;
  extents_t<R> extents{};

  template <class F, std::size_t... I>
  SYMFLOW_INLINE void for_read(F&& f, std::index_sequence<I...>) {
    ((detail::reads_operand<Op, I>() ? f(get<I>(children)) : void()), ...);
  }
  template <class F>
  SYMFLOW_INLINE void for_read(F&& f) {
    for_read(f, std::index_sequence_for<C...>{});
  }
  template <std::size_t I>
  SYMFLOW_INLINE auto scalar_of(std::size_t j) const {
    using V = typename plain_element_t<I, plain_tuple<C...>>::value_type;
    if constexpr (detail::reads_operand<Op, I>()) return get<I>(children).scalar(j);
    else return V{};
  }
  template <std::size_t I, class P, bool Dense>
  SYMFLOW_INLINE P packet_of(std::size_t j) const {
    if constexpr (detail::reads_operand<Op, I>()) return get<I>(children).template packet<P, Dense>(j);
    else return simd::pm::pzero(P{});
  }

  template <class Ctx>
  void prepare(Ctx& ctx) {
    for_read([&](auto& c) { c.prepare(ctx); });
  }
  void bind_frame(const frame& f) {
    for_read([&](auto& c) { c.bind_frame(f); });
  }
  template <class F>
  void visit_strides(F&& f) {
    for_read([&](auto& c) { c.visit_strides(f); });
  }
  SYMFLOW_INLINE void set_row(const frame& f, const row_cursor& cursor) {
    for_read([&](auto& c) { c.set_row(f, cursor); });
  }
  SYMFLOW_INLINE T scalar(std::size_t j) const {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return T(op.apply(scalar_of<I>(j)...));
    }(std::index_sequence_for<C...>{});
  }
  template <class P, bool Dense = false>
  SYMFLOW_INLINE P packet(std::size_t j) const {
    if constexpr (selects) {
      return op.select_packet(get<0>(children).template mask_packet<P, Dense>(j), packet_of<1, P, Dense>(j),
                              packet_of<2, P, Dense>(j));
    } else {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return op.packet(packet_of<I, P, Dense>(j)...);
      }(std::index_sequence_for<C...>{});
    }
  }
  // This bool node's value as lanes of all-ones or zero bits over packets P (masks_over).
  template <class P, bool Dense = false>
  SYMFLOW_INLINE P mask_packet(std::size_t j) const {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (requires(const P& p) { Op::mask_packet(((void)I, p)...); })
        return op.mask_packet(packet_of<I, P, Dense>(j)...);
      else
        return op.mask_of_masks(get<I>(children).template mask_packet<P, Dense>(j)...);
    }(std::index_sequence_for<C...>{});
  }
};

// Within one fused loop a subexpression whose value its type alone fixes (placeholders, variables,
// compile-time literals) has one value per element, wherever it occurs: the loss and each gradient
// of a model repeat exp(z) several times. Costly ones are computed once per element and read back
// by their repeats from a per-thread slot keyed by the type; set_row empties the slot.
// (A packet type passed to std::conditional_t loses its vector attributes, and GCC warns.)
template <bool Vector, class T>
struct reused_slot_value {
  using type = T;
};
template <class T>
struct reused_slot_value<true, T> {
  using type = simd::packet_t<T>;
};
template <class Node, class Inner>
struct reused_eval : Inner {
  using T = typename Inner::value_type;
  using inner_type = Inner;
  struct slot {
    std::size_t packet_at = std::size_t(-1), scalar_at = std::size_t(-1);
    typename reused_slot_value<Inner::vectorizable, T>::type packet{};
    T scalar{};
  };
  static slot& cache() {
    thread_local slot s;
    return s;
  }
  // Where a pass runs in row blocks (row_blocks.hpp), the value is computed once per block into
  // memory and read from there by every user in the block, reductions included.
  leaf_eval<T> stored;

  explicit reused_eval(Inner inner) : Inner(std::move(inner)) {}
  void bind_frame(const frame& f) {
    if (stored.data) stored.bind_frame(f);
    else Inner::bind_frame(f);
  }
  template <class F>
  void visit_strides(F&& f) {
    if (stored.data) stored.visit_strides(f);
    else Inner::visit_strides(f);
  }
  SYMFLOW_INLINE void set_row(const frame& f, const row_cursor& c) {
    if (stored.data) {
      stored.set_row(f, c);
      return;
    }
    Inner::set_row(f, c);
    slot& s = cache();
    s.packet_at = s.scalar_at = std::size_t(-1);
  }
  SYMFLOW_INLINE T scalar(std::size_t j) const {
    if (stored.data) return stored.scalar(j);
    slot& s = cache();
    if (s.scalar_at != j) {
      s.scalar = Inner::scalar(j);
      s.scalar_at = j;
    }
    return s.scalar;
  }
  template <class P, bool Dense = false>
  SYMFLOW_INLINE P packet(std::size_t j) const {
    if (stored.data) return stored.template packet<P, Dense>(j);
    slot& s = cache();
    if (s.packet_at != j) {
      s.packet = Inner::template packet<P, Dense>(j);
      s.packet_at = j;
    }
    return s.packet;
  }
};

// How often E occurs across the outputs being evaluated (2 when they are not known: reuse is safe).
template <class E, class Ctx>
constexpr std::size_t occurrences_in_outputs() {
  if constexpr (requires { typename Ctx::roots; })
    return []<class... R>(std::type_identity<std::tuple<R...>>) {
      return (std::size_t(0) + ... + occurrences<E, R>());
    }(std::type_identity<typename Ctx::roots>{});
  else
    return 2;
}

// The context for evaluating the outputs Roots (a std::tuple of their types). The context's type
// is part of the name of every function an evaluation instantiates, so outputs are named in it only
// where occurrences are counted (they have a reusable node) and their trees are small; elsewhere
// they are left out and reuse is assumed where a subexpression qualifies for it. A deep model's
// loss spelled in each of those names made up most of its object file.
inline constexpr std::size_t max_named_outputs_tree = 256;
template <class Roots>
struct outputs_tree_size;
template <class... R>
struct outputs_tree_size<std::tuple<R...>> {
  static constexpr std::size_t value = [] {
    std::size_t n = 0;
    ((n = symflow::detail::saturating_sum(n, node_count<R>())), ...);
    return n;
  }();
};
// Whether E has a node occurrences_in_outputs is asked about (a class template: computed once per
// node type, so in time linear in the distinct nodes of a model that shares its subexpressions).
template <class E, class Operands = operands_of<E>>
struct has_reusable_node;
template <class E, class... A>
struct has_reusable_node<E, std::tuple<A...>> {
  static constexpr bool value = [] {
    if constexpr (E::kind == node_kind::elementwise) {
      if constexpr (is_costly_op_v<typename E::op_type> && is_type_determined<E>()) return true;
    }
    return (has_reusable_node<A>::value || ...);
  }();
};
template <class Roots>
struct outputs_named_in_context;
template <class... R>
struct outputs_named_in_context<std::tuple<R...>> {
  static constexpr bool value =
      (has_reusable_node<R>::value || ...) && outputs_tree_size<std::tuple<R...>>::value <= max_named_outputs_tree;
};
template <class Roots, class... Sources>
using outputs_context = std::conditional_t<outputs_named_in_context<Roots>::value, rooted_context<Roots, Sources...>,
                                           eval_context<Sources...>>;

// Shared by evaluators whose value is materialised: after prepare() they read as a leaf.
template <class T, std::size_t R>
struct materialised_base {
  using value_type = T;
  static constexpr std::size_t rank = R;
  static constexpr bool vectorizable = leaf_eval<T>::vectorizable;
  extents_t<R> extents{};
  leaf_eval<T> result;
  const leaf_eval<T>& as_leaf() const { return result; }

  // Computes the value once per evaluation: an identical node met earlier is read instead.
  template <class Node, class Ctx, class Compute>
  void prepare_shared(const Node& node, Ctx& ctx, Compute&& compute) {
    if (result.data) return;
    if (const materialised_value* m = ctx.find_materialised(node)) {
      result.data = static_cast<const T*>(m->data);
      result.rank = m->rank;
      result.extents = m->extents;
      result.strides = m->strides;
      ++counters().reused;
      return;
    }
    T* out = ctx.template allocate<T>(element_count<R>(extents));
    compute(out);
    result = leaf_eval<T>::template of<R>(out, extents, row_major_strides<R>(extents));
    materialised_value m;
    m.data = out;
    m.rank = result.rank;
    m.extents = result.extents;
    m.strides = result.strides;
    ctx.remember(node, m);
  }
  void bind_frame(const frame& f) { result.bind_frame(f); }
  template <class F>
  void visit_strides(F&& f) {
    result.visit_strides(f);
  }
  SYMFLOW_INLINE void set_row(const frame& f, const row_cursor& c) { result.set_row(f, c); }
  SYMFLOW_INLINE T scalar(std::size_t j) const { return result.scalar(j); }
  template <class P, bool Dense = false>
  SYMFLOW_INLINE P packet(std::size_t j) const {
    return result.template packet<P, Dense>(j);
  }
};

}  // namespace symflow::cpu
