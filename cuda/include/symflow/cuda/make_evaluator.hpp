#pragma once
// Building the evaluator tree of an expression: one evaluator per node, chosen by node_kind alone,
// with every runtime extent checked before any work (feeds against their leaves' shapes, broadcasts);
// and the two entry points of a root evaluator (prepare it, list what it reads).
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <symflow/core/params.hpp>
#include <symflow/core/tensor.hpp>
#include <symflow/expr/broadcast.hpp>
#include <symflow/expr/elementwise.hpp>
#include <symflow/expr/leaves.hpp>
#include <symflow/expr/reduction.hpp>
#include <symflow/expr/structural.hpp>
#include <symflow/expr/to_string.hpp>

#include "device_tensor.hpp"
#include "elementwise_evaluator.hpp"
#include "evaluation_context.hpp"
#include "leaf_evaluators.hpp"
#include "materialised_evaluators.hpp"
#include "node_labels.hpp"

namespace symflow::cuda {
namespace detail {

template <class Leaf, class Ctx>
auto named_leaf_evaluator(const Leaf& leaf, Ctx& ctx) {
  using T = typename Leaf::value_type;
  using S = typename Leaf::shape_type;
  constexpr std::size_t R = S::rank;
  constexpr std::size_t index = Ctx::template feed_index<Leaf::name>();
  constexpr bool is_variable = Leaf::kind == node_kind::variable;
  using sources_t = std::remove_cvref_t<decltype(ctx.sources)>;
  auto check = [&](const extents_t<R>& e) {
    if (!extents_match<S>(e))
      throw shape_error(describe(leaf) + ": expects " + type_string<Leaf>() + " but was given " +
                        std::string(dtype_name(dtype_v<T>)) + format_extents(e));
  };
  if constexpr (index != Ctx::npos) {
    using binding = std::remove_cvref_t<std::tuple_element_t<index, sources_t>>;
    static_assert(fed_dtype_matches_leaf<Leaf, typename binding::value_type>::value,
                  "symflow: the value fed to this placeholder or variable has the wrong dtype (leaf below)");
    static_assert(fed_rank_matches_leaf<Leaf, binding::rank>::value,
                  "symflow: the value fed to this placeholder or variable has the wrong rank (leaf below)");
    if constexpr (std::is_same_v<typename binding::value_type, T> && binding::rank == R) {
      const auto& v = std::get<index>(ctx.sources).value;
      check(v.extents());
      if constexpr (is_device_feed_v<binding>) return memory_eval<T, R, Leaf>::on_device(v.data(), v.extents(), v.strides());
      else return memory_eval<T, R, Leaf>::on_host(v.data(), v.extents(), v.strides());
    }
  } else if constexpr (is_variable && (Ctx::device_params_index() != Ctx::npos || Ctx::host_params_index() != Ctx::npos)) {
    const std::string name(Leaf::name.view());
    if constexpr (Ctx::device_params_index() != Ctx::npos) {
      const device_params& store = std::get<Ctx::device_params_index()>(ctx.sources);
      if (store.contains(name)) {
        const auto v = store.template view<T, dyn_shape<R>>(name);
        check(v.extents());
        return memory_eval<T, R, Leaf>::on_device(v.data(), v.extents(), v.strides());
      }
    }
    if constexpr (Ctx::host_params_index() != Ctx::npos) {
      const params& store = std::get<Ctx::host_params_index()>(ctx.sources);
      if (store.contains(name)) {
        const auto v = store.template view<T, dyn_shape<R>>(name);
        check(v.extents());
        return memory_eval<T, R, Leaf>::on_host(v.data(), v.extents(), v.strides());
      }
    }
    throw value_error(describe(leaf) + ": variable '" + name + "' has no value in the params store");
    return memory_eval<T, R, Leaf>{};
  } else if constexpr (is_variable) {
    static_assert(every_variable_has_a_value<Leaf, false>::value,
                  "symflow: a variable has no value: feed it (cuda::feed(W, tensor)) or pass a params or "
                  "cuda::device_params store to cuda::eval (variable below)");
  } else {
    static_assert(every_placeholder_is_fed<Leaf, false>::value,
                  "symflow: a placeholder is not fed: pass cuda::feed(x, tensor) or x = tensor to cuda::eval "
                  "(placeholder below)");
  }
}

template <class T, long long Value>
fixed_literal_eval<T, Value> static_literal_evaluator(const static_literal<T, Value>&) {
  return {};
}

template <expression E, class Ctx>
auto make_evaluator(const E& node, Ctx& ctx) {
  using T = typename E::value_type;
  constexpr std::size_t R = E::rank;
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) {
    auto ev = named_leaf_evaluator(node, ctx);
    ev.source = ref_of(node);
    return ev;
  } else if constexpr (E::kind == node_kind::literal && is_static_literal_v<E>) {
    return static_literal_evaluator(node);
  } else if constexpr (E::kind == node_kind::constant) {
    auto ev = memory_eval<T, R>::on_host(node.value->data(), node.value->extents(), node.value->strides());
    ev.source = ref_of(node);
    return ev;
  } else if constexpr (E::kind == node_kind::literal) {
    return literal_eval<T>{{}, T(node.value)};
  } else if constexpr (E::kind == node_kind::elementwise) {
    auto ev = std::apply(
        [&](const auto&... a) {
          using eval_t = elementwise_eval<typename E::op_type, T, R, decltype(make_evaluator(a, ctx))...>;
          return eval_t{{make_evaluator(a, ctx)...}, {}, ref_of(node)};
        },
        node.args());
    ev.extents.fill(1);
    std::apply(
        [&](const auto&... c) {
          const bool ok = (broadcast_into<R>(ev.extents, c.extents) && ...);
          if (!ok) {
            std::string shapes;
            ((shapes += (shapes.empty() ? "" : " and ") + format_extents(c.extents)), ...);
            throw shape_error(describe(node) + ": cannot broadcast operand shapes " + shapes);
          }
        },
        ev.children);
    return ev;
  } else if constexpr (E::kind == node_kind::reduction) {
    auto operand = make_evaluator(std::get<0>(node.args()), ctx);
    return reduction_eval<E, decltype(operand)>(std::move(operand), node);
  } else if constexpr (E::kind == node_kind::view) {
    auto operand = make_evaluator(std::get<0>(node.args()), ctx);
    return view_eval<E, decltype(operand)>(std::move(operand), node);
  } else {
    static_assert(E::kind == node_kind::kernel, "symflow::cuda: unknown node kind");
    return std::apply(
        [&](const auto&... a) {
          return kernel_eval<E, decltype(make_evaluator(a, ctx))...>(node, make_evaluator(a, ctx)...);
        },
        node.args());
  }
}

// The fusion group an evaluator heads, as text: "dense1/relu(dense1/add([dense1/matmul], b1))".
template <class H>
std::string describe_group(const H& head) {
  std::string s;
  head.describe(s);
  return s;
}

// Root evaluators that are maps (elementwise, a leaf or view copied out) prepare themselves; roots
// computed straight into the output (reductions, kernels) only their operands.
template <class Ev, class Ctx>
void prepare_root(Ev& ev, Ctx& ctx) {
  if constexpr (requires { ev.prepare_operands(ctx); }) ev.prepare_operands(ctx);
  else ev.prepare(ctx);
}
template <class Ev, class F>
void visit_root_reads(const Ev& ev, F&& f) {
  if constexpr (requires { ev.visit_root_reads(f); }) ev.visit_root_reads(f);
  else ev.visit_reads(f);
}

}  // namespace detail
}  // namespace symflow::cuda
