#pragma once
#include <vector>

#include "../../expr/accumulation.hpp"
#include "../../ops/add.hpp"
#include "materialised_evaluators.hpp"

namespace symflow::cpu {

// Values computed once per evaluation and read by every user as a leaf: held nodes (ops with
// `materialises`) and accumulations. They are computed when their evaluator is built, in a function
// of their own, so a user's evaluator holds a pointer to memory, not the evaluator tree below it:
// evaluator objects and the code that runs them stay the size of one node's loop.
template <class T, std::size_t R>
memory_eval<T, R> as_memory(const materialised_value& m) {
  extents_t<R> e{}, s{};
  for (std::size_t i = 0; i < R; ++i) {
    e[i] = m.extents[i];
    s[i] = m.strides[i];
  }
  return memory_eval<T, R>(static_cast<const T*>(m.data), e, s);
}
template <class T, std::size_t R, class Node, class Ctx>
memory_eval<T, R> remember_buffer(const Node& node, Ctx& ctx, const T* data, const extents_t<R>& extents) {
  materialised_value m;
  m.data = data;
  m.rank = R;
  const auto strides = row_major_strides<R>(extents);
  for (std::size_t i = 0; i < R; ++i) {
    m.extents[i] = extents[i];
    m.strides[i] = strides[i];
  }
  ctx.remember(node, m);
  return memory_eval<T, R>(data, extents, strides);
}

// `node` is what the value is remembered by; `value` what is computed (the node itself, or the
// operand of a hold node).
template <class Node, class Value, class Ctx>
[[gnu::noinline]] memory_eval<typename Node::value_type, Node::rank> evaluate_once(const Node& node, const Value& value,
                                                                                   Ctx& ctx) {
  using T = typename Node::value_type;
  constexpr std::size_t R = Node::rank;
  if (const materialised_value* m = ctx.find_materialised(node)) {
    ++counters().reused;
    return as_memory<T, R>(*m);
  }
  auto inner = make_evaluator(value, ctx);
  static_assert(decltype(inner)::rank == R);
  T* out = ctx.template allocate<T>(element_count<R>(inner.extents));
  inner.prepare(ctx);
  run_map<T>(inner, frame::of<R>(inner.extents), out);
  ++counters().fused_passes;
  return remember_buffer<T, R>(node, ctx, out, inner.extents);
}

template <class Node, class Ctx>
[[gnu::noinline]] memory_eval<typename Node::value_type, Node::rank> evaluate_accumulation(const Node& node, Ctx& ctx) {
  using T = typename Node::value_type;
  constexpr std::size_t R = Node::rank;
  if (const materialised_value* m = ctx.find_materialised(node)) {
    ++counters().reused;
    return as_memory<T, R>(*m);
  }
  using term_eval = decltype(make_evaluator(std::declval<const typename Node::term_type&>(), ctx));
  std::vector<term_eval> terms;
  terms.reserve(node.items().size());
  extents_t<R> extents{};
  extents.fill(1);
  for (const auto& t : node.items()) {
    terms.push_back(make_evaluator(t, ctx));
    if (!broadcast_into<R>(extents, terms.back().extents))
      throw shape_error("add_n: the terms of an adjoint do not broadcast to one shape: " + format_extents(extents) +
                        " and " + format_extents(terms.back().extents));
  }
  const std::size_t n = element_count<R>(extents);
  T* out = ctx.template allocate<T>(n);
  const frame f = frame::of<R>(extents);
  if (terms.empty()) std::fill(out, out + n, T(0));
  for (std::size_t k = 0; k < terms.size(); ++k) {
    terms[k].prepare(ctx);
    if (k == 0 && terms[k].extents == extents) {
      run_map<T>(terms[k], f, out);
    } else {
      if (k == 0) std::fill(out, out + n, T(0));
      // out += term, element by element in place (each element is read before it is written).
      using sum_eval = elementwise_eval<ops::add_op, T, R, memory_eval<T, R>, term_eval>;
      sum_eval sum{{memory_eval<T, R>(out, extents, row_major_strides<R>(extents)), std::move(terms[k])}, {}, extents};
      run_map<T>(sum, f, out);
    }
    ++counters().fused_passes;
  }
  return remember_buffer<T, R>(node, ctx, out, extents);
}

// An elementwise operand whose expression tree exceeds this many nodes is computed in a pass of its
// own (once per evaluation, found again by identity) instead of inside its user's loop. A model's
// shared subexpressions make trees exponentially larger than the model; fusing them would make the
// loop's code, and its evaluator object, grow with the tree.
inline constexpr std::size_t fusion_limit = 48;

// 1 where A is an elementwise value of reductions and scalar literals alone, with a reduction among
// them; 0 where it has no reduction but is still of that form (a literal); -1 otherwise.
template <class A>
constexpr int of_reductions_only() {
  if constexpr (A::kind == node_kind::reduction) {
    return 1;
  } else if constexpr (A::kind == node_kind::literal) {
    return 0;
  } else if constexpr (A::kind == node_kind::elementwise && !requires { A::op_type::materialises; }) {
    return []<class... O>(std::type_identity<std::tuple<O...>>) {
      int found = 0;
      bool other = false;
      ((of_reductions_only<O>() < 0 ? (void)(other = true) : (void)(found = std::max(found, of_reductions_only<O>()))), ...);
      return other ? -1 : found;
    }(std::type_identity<operands_of<A>>{});
  } else {
    return -1;
  }
}

template <expression A, class Ctx>
auto make_operand_evaluator(const A& a, Ctx& ctx) {
  if constexpr (A::kind == node_kind::elementwise && tree_size_up_to<A, fusion_limit + 1>() > fusion_limit) {
    return evaluate_once(a, a, ctx);
  } else if constexpr (A::kind == node_kind::elementwise && of_reductions_only<A>() == 1) {
    auto inner = make_evaluator(a, ctx);
    return small_map_eval<A, decltype(inner)>(std::move(inner), a);
  } else {
    return make_evaluator(a, ctx);
  }
}

namespace detail {
template <class Leaf, class Ctx>
auto named_leaf_evaluator(const Leaf& leaf, Ctx& ctx) {
  using T = typename Leaf::value_type;
  using S = typename Leaf::shape_type;
  constexpr std::size_t R = S::rank;
  constexpr std::size_t index = Ctx::template feed_index<Leaf::name>();
  constexpr bool is_variable = Leaf::kind == node_kind::variable;
  auto check = [&](const extents_t<R>& e) {
    if (!extents_match<S>(e))
      throw shape_error(describe(leaf) + ": expects " + type_string<Leaf>() + " but was given " +
                        std::string(dtype_name(dtype_v<T>)) + format_extents(e));
  };
  // A leaf that is not fed (or fed the wrong dtype or rank) is one compile error naming it
  // (feed_message); a dummy evaluator is returned so that nothing else fails after it.
  constexpr auto dummy = [] { return memory_eval<T, R>(nullptr, extents_t<R>{}, extents_t<R>{}); };
  if constexpr (Leaf::name == invalid_operands_name) {
    return dummy();  // reported where it was built
  } else if constexpr (index != Ctx::npos) {
    using binding = std::remove_cvref_t<std::tuple_element_t<index, decltype(ctx.sources)>>;
    if constexpr (!std::is_same_v<typename binding::value_type, T>) {
      constexpr auto message = feed_message<Leaf, feed_problem::wrong_dtype, typename binding::value_type>();
      (void)sizeof(compile_error<diag::trim<message.size + 1>(message)>);
      return dummy();
    } else if constexpr (binding::rank != R) {
      constexpr auto message = feed_message<Leaf, feed_problem::wrong_rank, void, binding::rank>();
      (void)sizeof(compile_error<diag::trim<message.size + 1>(message)>);
      return dummy();
    } else {
      const auto& v = std::get<index>(ctx.sources).value;
      check(v.extents());
      return memory_eval<T, R>(v.data(), v.extents(), v.strides());
    }
  } else if constexpr (is_variable && Ctx::params_index() != Ctx::npos) {
    const params& store = std::get<Ctx::params_index()>(ctx.sources);
    const std::string name(Leaf::name.view());
    if (!store.contains(name))
      throw value_error(describe(leaf) + ": variable '" + name + "' has no value in the params store");
    const auto v = store.template view<T, dyn_shape<R>>(name);
    check(v.extents());
    return memory_eval<T, R>(v.data(), v.extents(), v.strides());
  } else if constexpr (is_variable) {
    constexpr auto message = feed_message<Leaf, feed_problem::no_value>();
    (void)sizeof(compile_error<diag::trim<message.size + 1>(message)>);
    return dummy();
  } else {
    constexpr auto message = feed_message<Leaf, feed_problem::not_fed>();
    (void)sizeof(compile_error<diag::trim<message.size + 1>(message)>);
    return dummy();
  }
}
}  // namespace detail

template <expression E, class Ctx>
auto make_evaluator(const E& node, Ctx& ctx) {
  using T = typename E::value_type;
  constexpr std::size_t R = E::rank;
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) {
    return detail::named_leaf_evaluator(node, ctx);
  } else if constexpr (E::kind == node_kind::constant) {
    return memory_eval<T, R>(node.value->data(), node.value->extents(), node.value->strides());
  } else if constexpr (E::kind == node_kind::literal) {
    return literal_eval<T>{{node.value}};
  } else if constexpr (E::kind == node_kind::elementwise && requires { E::op_type::materialises; }) {
    return evaluate_once(node, std::get<0>(node.args()), ctx);
  } else if constexpr (E::kind == node_kind::accumulation) {
    return evaluate_accumulation(node, ctx);
  } else if constexpr (E::kind == node_kind::reference) {
    return make_evaluator(std::get<0>(node.args()), ctx);  // a held value or a leaf: read from memory
  } else if constexpr (E::kind == node_kind::elementwise) {
    auto ev = std::apply(
        [&](const auto&... a) {
          using eval_t = elementwise_eval<typename E::op_type, T, R, decltype(make_operand_evaluator(a, ctx))...>;
          return eval_t{{{{make_operand_evaluator(a, ctx)}...}}, node.op, {}};
        },
        node.args());
    ev.extents.fill(1);
    apply_plain(
        [&](const auto&... c) {
          bool ok = (broadcast_into<R>(ev.extents, c.extents) && ...);
          if (!ok) {
            std::string shapes;
            ((shapes += (shapes.empty() ? "" : " and ") + format_extents(c.extents)), ...);
            throw shape_error(describe(node) + ": cannot broadcast operand shapes " + shapes);
          }
        },
        ev.children);
    // Nested, not joined with &&: counting occurrences walks the outputs' trees, and is asked
    // only of the few nodes the first two conditions leave.
    if constexpr (is_costly_op_v<typename E::op_type> && is_type_determined<E>()) {
      if constexpr (occurrences_in_outputs<E, Ctx>() >= 2) return reused_eval<E, decltype(ev)>(std::move(ev));
      else return ev;
    } else {
      return ev;
    }
  } else if constexpr (E::kind == node_kind::reduction) {
    auto operand = make_operand_evaluator(std::get<0>(node.args()), ctx);
    return reduction_eval<E, decltype(operand)>(std::move(operand), node);
  } else if constexpr (E::kind == node_kind::view) {
    auto operand = make_operand_evaluator(std::get<0>(node.args()), ctx);
    return view_eval<E, decltype(operand)>(std::move(operand), node);
  } else {
    static_assert(E::kind == node_kind::kernel);
    return std::apply([&](const auto&... a) { return kernel_eval<E, decltype(make_operand_evaluator(a, ctx))...>(node, make_operand_evaluator(a, ctx)...); },
                      node.args());
  }
}

}  // namespace symflow::cpu
