#pragma once
// The forward node of scan (nn/scan.hpp): the body, run once per step of xs's leading axis.
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../core/tensor.hpp"
#include "../eval/cpu/eval.hpp"
#include "../expr/leaves.hpp"
#include "../expr/structural.hpp"
#include "../ir/control_flow/signature.hpp"
#include "../ir/to_graph.hpp"
#include "../ops/all.hpp"
#include "../symbolic/gradient.hpp"

namespace symflow {
namespace detail::scan {

template <class S>
struct step_shape;  // xs's shape without its time axis
template <std::size_t Time, std::size_t... D>
struct step_shape<shape<Time, D...>> {
  using type = shape<D...>;
};
template <class S>
struct stacked_shape;  // a state's shape with a leading time axis
template <std::size_t... D>
struct stacked_shape<shape<D...>> {
  using type = shape<dyn, D...>;
};

template <class T, class S>
using state_leaf = placeholder<"scan/state", T, S>;
template <class T, class S>
using input_leaf = placeholder<"scan/input", T, S>;
template <class T, class S>
using adjoint_leaf = placeholder<"scan/adjoint", T, S>;

template <class E>
constexpr bool is_scan_leaf() {
  if constexpr (E::kind == node_kind::placeholder)
    return E::name.view() == "scan/state" || E::name.view() == "scan/input" || E::name.view() == "scan/adjoint";
  else
    return false;
}

// The leaves of the body other than the scan's own placeholders, each once, as a std::tuple.
template <class E>
struct is_outer_leaf : std::bool_constant<is_leaf_node<E>::value && !is_scan_leaf<E>()> {};
template <class Body>
using outer_leaves_t = typename tuple_of_list<nodes_where_t<is_outer_leaf, Body>>::type;

// A view of step t of a [T, ...] view.
template <class U, std::size_t R, class V>
tensor_view<U, dyn_shape<R - 1>> step_of(const V& all, std::size_t t) {
  extents_t<R - 1> e{};
  for (std::size_t i = 1; i < R; ++i) e[i - 1] = all.extents()[i];
  std::size_t n = 1;
  for (std::size_t d : e) n *= d;
  return tensor_view<U, dyn_shape<R - 1>>(all.data() + t * n, e);
}

template <class Leaf, class V>
auto bind(const V& view) {
  return feed<Leaf::name>(view);
}

template <class T>
void copy_into(T* out, const T* in, std::size_t n) {
  if (n) std::memcpy(out, in, n * sizeof(T));
}

// The derivatives a scan's ops do not have: asking for one is a compile error that names it, not
// a silent zero. (Instantiated only when a jvp or a second derivative reaches a scan.)
struct first_order_only {
  template <class G, class Y, class... A>
  auto gradient(const G&, const Y&, const A&...) const {
    static_assert(sizeof(G) == 0, "symflow: scan: second derivatives through a scan are not supported");
    return no_gradient{};
  }
  template <class Y, class... X>
  auto tangent(const Y&, const X&...) const {
    static_assert(sizeof(Y) == 0, "symflow: scan: jvp and second derivatives through a scan are not supported");
    return no_gradient{};
  }
};

}  // namespace detail::scan

namespace ops {

template <class Body, class State, class Input, class Leaves>
struct scan_backward_op;  // nn/scan_backward.hpp

// The forward recurrence. Operands: h0, xs, then the body's outer leaves. Its value is every state,
// stacked along a new leading axis.
template <class Body, class State, class Input, class Leaves>
struct scan_op;
template <class Body, class State, class Input, class... Leaves>
struct scan_op<Body, State, Input, std::tuple<Leaves...>> : detail::scan::first_order_only {
  static constexpr std::string_view name = "scan";
  // Not through a runtime program (runtime/program_gradient.hpp): eval and grad of a model with a
  // scan run the typed forms here and in scan_backward.hpp.
  static constexpr bool graph_form = false;
  std::shared_ptr<const Body> body;
  bool operator==(const scan_op& other) const { return body == other.body; }

  // Its form in a graph value (ir/to_graph.hpp): the graph's own scan (ir/control_flow/scan.hpp),
  // whose body is this body lowered and called with (state, step, leaves...), the order of this
  // node's operands.
  std::vector<graph_attribute> graph_attributes() const {
    std::vector<control_flow::call_input> order{{std::string(State::name.view()), symflow::detail::graph_type_of<State>()},
                                                {std::string(Input::name.view()), symflow::detail::graph_type_of<Input>()}};
    (order.push_back({std::string(Leaves::name.view()), symflow::detail::graph_type_of<Leaves>()}), ...);
    return {{"body", subgraph{std::make_shared<const graph>(control_flow::with_inputs(to_graph(*body), order))}}};
  }

  static constexpr bool contiguous_operands = true;
  template <class... V>
  using result_type = typename State::value_type;
  template <class... S>
  static constexpr bool shapes_ok = true;
  template <class... S>
  using result_shape = typename detail::scan::stacked_shape<typename State::shape_type>::type;

  template <std::size_t RH, std::size_t RX, class... E>
  static auto infer_extents(const auto& who, const extents_t<RH>& h0, const extents_t<RX>& xs, const E&...) {
    extents_t<RH + 1> out{};
    out[0] = xs[0];
    for (std::size_t i = 0; i < RH; ++i) out[i + 1] = h0[i];
    if (xs[0] == 0) throw shape_error(who + ": the sequence (axis 0 of xs) is empty; scan needs at least one step");
    return out;
  }

  template <class U, class Out, class H, class X, class... L>
  void run_cpu(const Out& out, const H& h0, const X& xs, const L&... leaves) const {
    constexpr std::size_t rx = X::rank, rh = H::rank;
    const std::size_t steps = xs.extents()[0], n = h0.size();
    tensor<U, shape_of<Body>> next;
    for (std::size_t t = 0; t < steps; ++t) {
      const auto previous = t == 0 ? tensor_view<const U, dyn_shape<rh>>(h0.data(), h0.extents())
                                   : tensor_view<const U, dyn_shape<rh>>(out.data() + (t - 1) * n, h0.extents());
      eval_into(next, *body, detail::scan::bind<State>(previous),
                detail::scan::bind<Input>(detail::scan::step_of<const typename X::value_type, rx>(xs, t)),
                detail::scan::bind<Leaves>(leaves)...);
      if (next.extents() != h0.extents())
        throw shape_error("scan: the cell returned a state of shape " + format_extents(next.extents()) + " at step " +
                          std::to_string(t) + "; the initial state has shape " + format_extents(h0.extents()));
      detail::scan::copy_into(out.data() + t * n, next.data(), n);
    }
  }

  template <class G, class Y, class H, class X, class... L>
  auto gradient(const G& g, const Y& y, const H& h0, const X& xs, const L&... leaves) const {
    using back_op = scan_backward_op<Body, State, Input, std::tuple<Leaves...>>;
    const auto back = make_kernel(back_op::make(body), source_site::current(), y, g, h0, xs, leaves...);
    return back_op::adjoints(back, h0, xs, leaves...);
  }
  using first_order_only::tangent;
};

}  // namespace ops
}  // namespace symflow
