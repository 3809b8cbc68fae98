#pragma once
// Backpropagation through time for scan (nn/scan.hpp). scan_backward runs the steps in reverse on the
// forward states: at step t the adjoint reaching state[t] (from the loss, plus what step t+1 sent
// back) goes through the body's vector-Jacobian product to state[t-1] (or h0), to xs[t] and to every
// leaf of the body, whose per-step adjoints add up. Its value is all of these, flattened one after
// another (h0's, xs's when floating, then each floating leaf's); a scan_adjoint node copies one out.
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "scan_forward.hpp"

namespace symflow {
namespace ops {

// The operands of a scan node, h0, xs and its leaves, that have adjoints: the floating-point ones
// (A: their node types, or the views of their values).
template <class... A>
inline constexpr std::array<bool, sizeof...(A)> floating_operands{std::is_floating_point_v<typename A::value_type>...};

template <class T, shape_spec S>
struct scan_adjoint_op;

template <class Body, class State, class Input, class... Leaves>
struct scan_backward_op<Body, State, Input, std::tuple<Leaves...>> : detail::scan::first_order_only {
  using T = typename State::value_type;
  using adjoint = detail::scan::adjoint_leaf<T, typename State::shape_type>;
  static constexpr std::string_view name = "scan_backward";
  static constexpr bool graph_form = false;

  // What the body's VJP is taken with respect to: the state, then the input and leaves that are
  // floating-point.
  template <class Leaf>
  static auto if_floating() {
    if constexpr (std::is_floating_point_v<typename Leaf::value_type>) return std::tuple<Leaf>{};
    else return std::tuple<>{};
  }
  using targets = decltype(std::tuple_cat(std::tuple<State>{}, if_floating<Input>(), if_floating<Leaves>()...));
  static auto vjp_of(const Body& body) {
    const auto surrogate = sum(body * adjoint{});
    return std::apply(
        [&](const auto&... target) {
          if constexpr (sizeof...(target) == 1) return std::tuple{grad(surrogate, target...)};
          else return std::apply([](const auto&... g) { return std::tuple{g...}; }, grad(surrogate, target...));
        },
        targets{});
  }
  using vjp_type = decltype(vjp_of(std::declval<const Body&>()));
  std::shared_ptr<const vjp_type> vjp;

  static scan_backward_op make(const std::shared_ptr<const Body>& body) {
    return {{}, std::make_shared<const vjp_type>(vjp_of(*body))};
  }
  bool operator==(const scan_backward_op& other) const { return vjp == other.vjp; }

  static constexpr bool contiguous_operands = true;
  template <class... V>
  using result_type = T;
  template <class... S>
  static constexpr bool shapes_ok = true;
  template <class... S>
  using result_shape = shape<dyn>;

  // Operands: y (the forward states), g (their adjoint), then the forward node's h0, xs and leaves,
  // of which the floating-point ones have a part in the result.
  template <class EY, class EG, class... E>
  static extents_t<1> infer_extents(const auto&, const EY&, const EG&, const E&... in) {
    constexpr auto floating = floating_operands<State, Input, Leaves...>;
    std::size_t total = 0, k = 0;
    ((total += floating[k++] ? element_count(runtime_extents(in.begin(), in.end())) : 0), ...);
    return {total};
  }

  template <class U, class Out, class Y, class G, class H, class X, class... L>
  void run_cpu(const Out& out, const Y& y, const G& g, const H& h0, const X& xs, const L&... leaves) const {
    constexpr std::size_t rh = H::rank, rx = X::rank;
    constexpr bool input_floating = std::is_floating_point_v<typename Input::value_type>;
    const std::size_t steps = xs.extents()[0], n = h0.size();
    const std::size_t x_step = steps ? xs.size() / steps : 0;
    U* const h0_part = out.data();
    U* const xs_part = h0_part + n;
    U* const leaves_part = xs_part + (input_floating ? xs.size() : 0);
    std::fill(out.data(), out.data() + out.size(), U(0));

    tensor<U, dyn_shape<rh>> carry(h0.extents(), U(0)), total(h0.extents(), U(0));
    auto parts = std::apply([](const auto&... e) { return std::tuple<tensor<U, shape_of<std::remove_cvref_t<decltype(e)>>>...>{}; },
                            *vjp);
    for (std::size_t s = steps; s-- > 0;) {
      for (std::size_t i = 0; i < n; ++i) total.data()[i] = g.data()[s * n + i] + carry.data()[i];
      const auto previous = s == 0 ? tensor_view<const U, dyn_shape<rh>>(h0.data(), h0.extents())
                                   : tensor_view<const U, dyn_shape<rh>>(y.data() + (s - 1) * n, h0.extents());
      const auto x_t = detail::scan::step_of<const typename X::value_type, rx>(xs, s);
      std::apply(
          [&](auto&... part) {
            std::apply(
                [&](const auto&... e) {
                  eval_into(std::tie(part...), e..., detail::scan::bind<State>(previous), detail::scan::bind<Input>(x_t),
                            detail::scan::bind<adjoint>(tensor_view<const U, dyn_shape<rh>>(total.data(), h0.extents())),
                            detail::scan::bind<Leaves>(leaves)...);
                },
                *vjp);
          },
          parts);
      detail::scan::copy_into(carry.data(), std::get<0>(parts).data(), n);
      if constexpr (input_floating) detail::scan::copy_into(xs_part + s * x_step, std::get<1>(parts).data(), x_step);
      add_leaf_parts<1 + input_floating>(leaves_part, parts);
    }
    detail::scan::copy_into(h0_part, carry.data(), n);
  }


  // The adjoint of every operand of the forward node (h0, xs, leaves): a scan_adjoint of `back` for
  // the floating ones, no_gradient for the others.
  template <class Back, class H, class X, class... L>
  static auto adjoints(const Back& back, const H& h0, const X& xs, const L&... leaves) {
    constexpr auto floating = floating_operands<State, Input, Leaves...>;
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return tuple_of(adjoint_of<K, floating[K], std::tuple_element_t<K, std::tuple<H, X, L...>>>(back, h0, xs, leaves...)...);
    }(std::make_index_sequence<2 + sizeof...(Leaves)>{});
  }

 private:
  template <std::size_t K, bool Floating, class A, class Back, class... Ops>
  static auto adjoint_of(const Back& back, const Ops&... ops) {
    if constexpr (!Floating) return no_gradient{};
    else return make_kernel(scan_adjoint_op<value_type_of<A>, shape_of<A>>{{}, K}, source_site::current(), back, ops...);
  }
  // Adds the per-step adjoint of each floating leaf (parts[First], parts[First + 1], ...) to its
  // running sum; the sums follow each other in out.
  template <std::size_t First, class Parts>
  static void add_leaf_parts(T* out, const Parts& parts) {
    [&]<std::size_t... P>(std::index_sequence<P...>) {
      (
          [&](const auto& t) {
            for (std::size_t i = 0, n = t.size(); i < n; ++i) out[i] += t.data()[i];
            out += t.size();
          }(std::get<First + P>(parts)),
          ...);
    }(std::make_index_sequence<std::tuple_size_v<Parts> - First>{});
  }
};

// Operand k of the forward node's adjoint, copied out of scan_backward's value (operand 0); the
// other operands are the forward node's operands again, read for their extents only.
template <class T, shape_spec S>
struct scan_adjoint_op : detail::scan::first_order_only {
  static constexpr std::string_view name = "scan_adjoint";
  static constexpr bool graph_form = false;
  std::size_t index = 0;
  bool operator==(const scan_adjoint_op& other) const { return index == other.index; }

  static constexpr bool contiguous_operands = true;
  template <std::size_t I>
  static constexpr bool reads_operand = I == 0;
  template <class... V>
  using result_type = T;
  template <class... Sh>
  static constexpr bool shapes_ok = true;
  template <class... Sh>
  using result_shape = S;

  template <class Flat, class... E>
  extents_t<S::rank> infer_extents(const auto& who, const Flat&, const E&... in) const {
    const std::vector<runtime_extents> operands{runtime_extents(in.begin(), in.end())...};
    const runtime_extents& e = operands.at(index);
    if (e.size() != S::rank) throw shape_error(std::string(who) + ": operand " + std::to_string(index) + " has rank " + std::to_string(e.size()));
    extents_t<S::rank> out{};
    std::copy(e.begin(), e.end(), out.begin());
    return out;
  }
  template <class U, class Out, class Flat, class... In>
  void run_cpu(const Out& out, const Flat& flat, const In&... in) const {
    constexpr auto floating = floating_operands<In...>;
    const std::array<std::size_t, sizeof...(In)> sizes{in.size()...};
    std::size_t offset = 0;
    for (std::size_t k = 0; k < index; ++k)
      if (floating[k]) offset += sizes[k];
    if (out.size()) std::memcpy(out.data(), flat.data() + offset, out.size() * sizeof(U));
  }
};

}  // namespace ops
}  // namespace symflow
