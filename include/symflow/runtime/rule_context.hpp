#pragma once
// The graph-handle forms of the helpers that views' and kernels' derivative rules are written with
// (expr/derivative_rule.hpp): the same rule that builds typed expressions at compile time builds
// graph nodes here, when a graph value is differentiated (runtime/grad.hpp). `self` is a node_op:
// the op's family (its type with stand-in attributes, from the op list) and the node's attributes.
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../expr/derivative_rule.hpp"
#include "builder.hpp"
#include "op_table.hpp"

namespace symflow {

template <class StandIn>
struct node_op {
  const graph_node* node;
  // The node's copy with an attribute changed, when a rule asked for one (with_integer); node
  // points into it.
  std::shared_ptr<const graph_node> changed = nullptr;
  node_attributes attributes() const { return node_attributes(*node); }
};
template <class StandIn>
inline constexpr bool rule_on_types_v<node_op<StandIn>> = false;

template <fixed_string Key, class S>
std::vector<std::int64_t> integers(const node_op<S>& self) {
  return self.attributes().integers(Key.view());
}
template <fixed_string Key, class S>
std::int64_t integer(const node_op<S>& self) {
  return self.attributes().integer(Key.view());
}

namespace rule_detail {
template <template <auto...> class To, class S>
struct rebound;
template <template <auto...> class To, template <auto...> class From, auto... A>
struct rebound<To, From<A...>> {
  using type = To<A...>;
};
}  // namespace rule_detail

// The sibling op with the node's attributes (same keys: the family shares them).
template <template <auto...> class To, class S>
node_op<typename rule_detail::rebound<To, S>::type> sibling(const node_op<S>& self) {
  return {self.node, self.changed};
}

// The same op with the integer attribute Key set to `value` (expr/derivative_rule.hpp has the
// typed form): for adjoints that are the op itself with another attribute (cumsum's runs the
// other way).
template <fixed_string Key, class S>
node_op<S> with_integer(const node_op<S>& self, std::int64_t value) {
  auto copy = std::make_shared<graph_node>(*self.node);
  bool found = false;
  for (auto& a : copy->attributes)
    if (a.key == Key.view()) {
      a.value = value;
      found = true;
    }
  if (!found)
    throw graph_error("differentiate: node '" + self.node->name + "' (" + self.node->op + ") has no attribute '" +
                      std::string(Key.view()) + "'");
  const graph_node* node = copy.get();
  return {node, std::move(copy)};
}

template <class S, class... H>
  requires(std::is_same_v<H, graph_handle> && ...)
graph_handle apply_op_node(const node_op<S>& self, const H&... x) {
  const graph_handle* first = nullptr;
  ((first = first ? first : &x), ...);
  return first->builder->apply(S::name, {x...}, self.node->attributes);
}
template <class S>
graph_handle apply_view(const node_op<S>& self, const graph_handle& x) {
  return apply_op_node(self, x);
}
template <class S, class... H>
  requires(std::is_same_v<H, graph_handle> && ...)
graph_handle apply_kernel(const node_op<S>& self, const H&... x) {
  return apply_op_node(self, x...);
}
// An op object whose attributes are all known (template arguments or members) applied to handles.
template <class Op, class... H>
  requires(rule_on_types_v<Op> && (std::is_same_v<H, graph_handle> && ...))
graph_handle apply_kernel(const Op& op, const H&... x) {
  return apply_value(op, x...);
}
template <class Op>
  requires rule_on_types_v<Op>
graph_handle apply_view(const Op& op, const graph_handle& x) {
  return apply_value(op, x);
}

inline std::size_t rank_value(const graph_handle& x) { return x.rank(); }
inline std::vector<std::int64_t> shape_value(const graph_handle& x) { return x.shape(); }
inline std::int64_t known_extent(const graph_handle& x, std::int64_t axis) {
  const std::int64_t e = x.shape().at(std::size_t(axis));
  if (e < 0)
    throw shape_error("differentiate: this gradient needs a known extent along axis " + std::to_string(axis) +
                      " of an operand of shape " + graph_type_string(x.type()));
  return e;
}

template <auto Axis>
std::int64_t known_extent(const graph_handle& x, fixed<Axis>) {
  return known_extent(x, std::int64_t(Axis));
}

template <class F>
auto map_parts(const std::vector<graph_handle>& parts, F&& f) {
  std::vector<graph_handle> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.push_back(f(p));
  return out;
}

namespace runtime_detail {
// The operand count of a view's or kernel's rule: the arity its derivative takes.
template <class Op>
consteval std::size_t operand_count_of_rule() {
  using self = node_op<Op>;
  using h = graph_handle;
  if constexpr (requires(self s, h x) { Op::derivative(s, x, x, x); }) return 1;
  else if constexpr (requires(self s, h x) { Op::derivative(s, x, x, x, x); }) return 2;
  else if constexpr (requires(self s, h x) { Op::derivative(s, x, x, x, x, x); }) return 3;
  else return 4;
}

// A rule's result (a tuple of handles and no_gradient, or a vector of handles) as one optional
// adjoint per operand.
template <class R>
std::vector<std::optional<graph_handle>> adjoints_of(const R& result) {
  std::vector<std::optional<graph_handle>> out;
  if constexpr (std::is_same_v<R, std::vector<graph_handle>>) {
    for (const auto& h : result) out.emplace_back(h);
  } else {
    std::apply(
        [&](const auto&... a) {
          (out.push_back([&]() -> std::optional<graph_handle> {
             if constexpr (is_no_gradient_v<std::remove_cvref_t<decltype(a)>>) return std::nullopt;
             else return a;
           }()),
           ...);
        },
        result);
  }
  return out;
}

// A view's or kernel's rule on a graph node: self is the node's op, x its operands.
template <class Op>
std::vector<std::optional<graph_handle>> run_derivative_rule(const graph_node& n, const graph_handle& g,
                                                             const graph_handle& y, const std::vector<graph_handle>& x) {
  const node_op<Op> self{&n};
  if constexpr (requires { Op::derivative_of_parts; }) {
    return adjoints_of(Op::derivative(self, g, y, x));
  } else {
    constexpr std::size_t arity = operand_count_of_rule<Op>();
    if (x.size() != arity)
      throw graph_error("differentiate: node '" + n.name + "' (" + n.op + ") has " + std::to_string(x.size()) +
                        " operands, not " + std::to_string(arity));
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return adjoints_of(Op::derivative(self, g, y, x[I]...));
    }(std::make_index_sequence<arity>{});
  }
}
}  // namespace runtime_detail

}  // namespace symflow
