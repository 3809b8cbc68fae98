#pragma once
// The ops' derivative rules as the run-time differentiator (grad.hpp) uses them. Elementwise ops and
// reductions: the compile-time rule itself (Op::gradient), instantiated once per compute dtype on
// placeholders named g, y, x0.., count, simplified, lowered with to_graph into a small graph (a
// "rule fragment"). Views and kernels: their one rule (Op::derivative, written generic over where it
// runs: expr/derivative_rule.hpp) called with the node's attributes and graph handles
// (rule_context.hpp). One table of them, built from the op list.
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../symbolic/grad.hpp"
#include "../symbolic/simplify.hpp"
#include "../ir/to_graph.hpp"
#include "builder.hpp"
#include "rule_context.hpp"
#include "../core/separate_compilation.hpp"

namespace symflow {
namespace runtime_detail {

// A derivative rule as a graph: inputs among g, y, x0, x1, x2, count; one output per operand that
// has an adjoint (operand_output[k], or -1).
struct rule_fragment {
  graph body;
  std::vector<int> operand_output;
};

template <class Adjoints>
rule_fragment fragment_of(const Adjoints& adjoints) {
  rule_fragment f;
  // Which operands have an adjoint, decided from the types in operand order (function arguments
  // are evaluated in an unspecified order, so this is not recorded while building `kept`).
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    int next = 0;
    ((f.operand_output.push_back(is_no_gradient_v<std::tuple_element_t<I, Adjoints>> ? -1 : next++)), ...);
  }(std::make_index_sequence<std::tuple_size_v<Adjoints>>{});
  auto kept = std::apply(
      [&](const auto&... a) {
        return std::tuple_cat([&](const auto& x) {
          if constexpr (is_no_gradient_v<std::remove_cvref_t<decltype(x)>>) return std::tuple<>{};
          else return std::tuple{simplify(x)};
        }(a)...);
      },
      adjoints);
  if constexpr (std::tuple_size_v<decltype(kept)> > 0) f.body = to_graph(kept);
  return f;
}

template <class X0 = void, class X1 = void, class X2 = void>
auto operand_placeholders() {
  if constexpr (std::is_void_v<X1>) return std::tuple{placeholder<"x0", X0, shape<dyn>>()};
  else if constexpr (std::is_void_v<X2>)
    return std::tuple{placeholder<"x0", X0, shape<dyn>>(), placeholder<"x1", X1, shape<dyn>>()};
  else
    return std::tuple{placeholder<"x0", X0, shape<dyn>>(), placeholder<"x1", X1, shape<dyn>>(),
                      placeholder<"x2", X2, shape<dyn>>()};
}

template <class Op, class... Ts>
std::optional<rule_fragment> elementwise_fragment(const std::vector<dtype>& in) {
  if constexpr (sizeof...(Ts) == arity<Op>) {
    if constexpr (Op::template accepts<Ts...>) {
      using Y = typename Op::template result_type<Ts...>;
      // Conversions to and from storage dtypes (cast) are differentiated in differentiate_uncached.
      if constexpr (std::is_floating_point_v<Y> && (is_compute_dtype_v<Ts> && ...)) {
        const auto g = placeholder<"g", Y, shape<dyn>>();
        const auto y = placeholder<"y", Y, shape<dyn>>();
        return std::apply([&](const auto&... x) { return fragment_of(Op{}.gradient(g, y, x...)); },
                          operand_placeholders<Ts...>());
      }
    }
    return std::nullopt;
  } else {
    return visit_operand_dtype<Op>(in[sizeof...(Ts)], [&](auto t) { return elementwise_fragment<Op, Ts..., decltype(t)>(in); });
  }
}

template <class Op>
std::optional<rule_fragment> elementwise_rule(const node_attributes& a, const std::vector<dtype>& in) {
  if (in.size() != arity<Op>) return std::nullopt;
  if constexpr (requires { Op::with_runtime_instance(a, [](auto) {}); })
    return Op::with_runtime_instance(a, [&](auto op) { return elementwise_fragment<decltype(op)>(in); });
  else
    return elementwise_fragment<Op>(in);
}

// Reductions' rules take the adjoint and the value with the reduced axes kept (extent 1), the
// operand, the count of elements each result combines, and a reducer over the node's axes. On the
// rank-1 stand-ins that reducer reduces axis 0; splice() gives such reductions the node's axes.
template <class Op>
std::optional<rule_fragment> reduction_rule(const node_attributes&, const std::vector<dtype>& in) {
  return visit_compute_dtype(in.at(0), [&](auto t) -> std::optional<rule_fragment> {
    using T = decltype(t);
    if constexpr (std::is_floating_point_v<T>) {
      return fragment_of(Op::gradient(placeholder<"g", T, shape<dyn>>(), placeholder<"y", T, shape<dyn>>(),
                                      placeholder<"x0", T, shape<dyn>>(), placeholder<"count", T, shape<>>(),
                                      over_reduced_axes<1u>{}));
    } else {
      return std::nullopt;
    }
  });
}

using rule_fragment_fn = std::optional<rule_fragment> (*)(const node_attributes&, const std::vector<dtype>&);
using runtime_rule_fn = std::vector<std::optional<graph_handle>> (*)(const graph_node&, const graph_handle&,
                                                                      const graph_handle&,
                                                                      const std::vector<graph_handle>&);
struct derivative_rule {
  std::string_view name;
  node_kind kind;
  rule_fragment_fn fragment = nullptr;  // elementwise ops and reductions
  runtime_rule_fn runtime = nullptr;    // views and kernels
};

template <class Entry>
derivative_rule derivative_rule_of() {
  using Op = typename Entry::type;
  derivative_rule r{Op::name, Entry::kind};
  if constexpr (Entry::kind == node_kind::elementwise) r.fragment = &elementwise_rule<Op>;
  else if constexpr (Entry::kind == node_kind::reduction) r.fragment = &reduction_rule<Op>;
  else r.runtime = &run_derivative_rule<Op>;
  return r;
}

// Every op's derivative rule (instantiates each view's and kernel's rule on graph handles: see
// core/separate_compilation.hpp), built in two halves of the op list, which a library build
// compiles in two units: one instantiation of them all took a unit over two minutes under ASan.
template <std::size_t First, std::size_t Last>
std::vector<derivative_rule> derivative_rules_between() {
  std::vector<derivative_rule> v;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (v.push_back(derivative_rule_of<std::tuple_element_t<First + I, registered_ops>>()), ...);
  }(std::make_index_sequence<Last - First>{});
  return v;
}
inline constexpr std::size_t derivative_rules_half = std::tuple_size_v<registered_ops> / 2;
#if SYMFLOW_LIBRARY_DERIVATIVE_RULES_DECLARED_ONLY
std::vector<derivative_rule> first_derivative_rules();
#else
SYMFLOW_LIBRARY_LINKAGE std::vector<derivative_rule> first_derivative_rules() {
  return derivative_rules_between<0, derivative_rules_half>();
}
#endif
#if SYMFLOW_LIBRARY_DERIVATIVE_RULES_2_DECLARED_ONLY
std::vector<derivative_rule> second_derivative_rules();
#else
SYMFLOW_LIBRARY_LINKAGE std::vector<derivative_rule> second_derivative_rules() {
  return derivative_rules_between<derivative_rules_half, std::tuple_size_v<registered_ops>>();
}
#endif

#if SYMFLOW_LIBRARY_DERIVATIVE_RULES_DECLARED_ONLY
const derivative_rule* find_derivative_rule(std::string_view name);
#else
SYMFLOW_LIBRARY_LINKAGE const derivative_rule* find_derivative_rule(std::string_view name) {
  static const std::vector<derivative_rule> all = [] {
    std::vector<derivative_rule> v = first_derivative_rules(), second = second_derivative_rules();
    v.insert(v.end(), second.begin(), second.end());
    return v;
  }();
  for (const auto& r : all)
    if (r.name == name) return &r;
  return nullptr;
}
#endif
}  // namespace runtime_detail
}  // namespace symflow
