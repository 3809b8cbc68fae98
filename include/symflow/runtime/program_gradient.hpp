#pragma once
// Gradients of large models computed by a runtime program (runtime/program.hpp): the loss is
// lowered to a graph and differentiated by the ops' runtime rules once, when grad() is called; two
// typed kernel nodes carry the result into expressions. program_run's operands are the loss's
// leaves and its value is every output of the program, flattened one after another; each
// gradient is a program_output node that copies its part out. Their types name the leaves, not the
// loss, so a model's gradient costs the compiler its lowering and nothing per adjoint.
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../expr/structural.hpp"
#include "program.hpp"
#include "program_lookup.hpp"
#include "../ir/to_graph.hpp"
#include "../eval/output_destination.hpp"
#include "../eval/program_route.hpp"
#include "../ops/all.hpp"
#include "../symbolic/gradient.hpp"

namespace symflow {
namespace detail::program {

template <class V>
bound_leaf bind_view(const V& view) {
  using T = std::remove_const_t<typename V::value_type>;
  return bound_leaf{dtype_v<T>, runtime_extents(view.extents().begin(), view.extents().end()), view.data()};
}

}  // namespace detail::program

namespace ops {

// Runs a program on its operands; its value is the program's outputs, flattened, one after another.
// Only program_output nodes read it, and they send their adjoints to the operands themselves, so
// nothing flows back through this node.
template <class T>
struct program_run_op {
  static constexpr std::string_view name = "program_run";
  std::shared_ptr<const runtime_program> program;
  bool operator==(const program_run_op& other) const { return program == other.program; }

  static constexpr bool contiguous_operands = true;
  template <class... V>
  using result_type = T;
  template <class... S>
  static constexpr bool shapes_ok = true;
  template <class... S>
  using result_shape = shape<dyn>;

  template <class... E>
  extents_t<1> infer_extents(const auto&, const E&... in) const {
    // Element counts, not extents: typed evaluation asks this of each program_output's operand
    // in every step, where a vector of extents per operand cost a few hundred allocations.
    const auto count = [](const auto& e) {
      std::size_t n = 1;
      for (auto x : e) n *= std::size_t(x);
      return n;
    };
    const std::array<std::size_t, sizeof...(E) + 1> elements{count(in)..., 0};
    return {program->flat_size(elements.data(), sizeof...(E))};
  }
  template <class U, class Out, class... In>
  void run_cpu(const Out& out, const In&... in) const {
    program->run(out.data(), {detail::program::bind_view(in)...});
  }
  // As run_cpu, with the outputs that program_output nodes want in the evaluation's result tensors
  // written there (eval/output_destination.hpp), unless a result tensor overlaps an operand (a
  // tensor evaluated into while it is read: its output goes through the buffer, as before).
  static constexpr bool writes_destinations = true;
  template <class U, class Out, class... In>
  void run_cpu_to(const Out& out, output_destinations& destinations, const In&... in) const {
    std::vector<void*> elsewhere;
    std::vector<output_destination*> taken;
    for (auto& d : destinations) {
      if (d.source != program.get() || d.index >= program->output_sources().size()) continue;
      const std::size_t source = program->output_sources()[d.index];
      const std::size_t bytes = (source == runtime_program::scalar_output ? 1 : operand_size(source, in...)) * sizeof(U);
      const auto* begin = static_cast<const char*>(d.data);
      const bool overlaps = ((begin < reinterpret_cast<const char*>(in.data() + in.size()) &&
                              reinterpret_cast<const char*>(in.data()) < begin + bytes) ||
                             ...);
      if (overlaps || !bytes || (!elsewhere.empty() && elsewhere[d.index])) continue;  // one place per output
      if (elsewhere.empty()) elsewhere.assign(program->output_sources().size(), nullptr);
      elsewhere[d.index] = d.data;
      taken.push_back(&d);
    }
    program->run(out.data(), {detail::program::bind_view(in)...}, elsewhere);
    for (auto* d : taken) d->written = true;
  }
  // Elements of operand k.
  template <class... In>
  static std::size_t operand_size(std::size_t k, const In&... in) {
    std::size_t n = 0, i = 0;
    ((n = i++ == k ? in.size() : n), ...);
    return n;
  }
  template <class G, class Y, class... A>
  auto gradient(const G&, const Y&, const A&...) const {
    return tuple_of((void(sizeof(A)), no_gradient{})...);
  }
  template <class Y, class... X>
  auto tangent(const Y&, const X&...) const {
    return no_gradient{};
  }
};

// Output `index` of a program_run (operand 0), shaped like the program operand it is the adjoint
// of; operands 1... are the program's operands again, read for their extents only.
template <class T, shape_spec S>
struct program_output_op {
  static constexpr std::string_view name = "program_output";
  std::shared_ptr<const runtime_program> program;
  std::size_t index = 0;
  bool operator==(const program_output_op& other) const { return program == other.program && index == other.index; }
  // The program run computing this output may write it where the evaluation wants it
  // (eval/output_destination.hpp).
  std::pair<const void*, std::size_t> destination() const { return {program.get(), index}; }

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
    const std::size_t source = program->output_sources().at(index);
    extents_t<S::rank> out{};
    bool found = source == runtime_program::scalar_output && S::rank == 0;
    std::size_t k = 0, rank = 0;
    (
        [&](const auto& e) {
          if (k++ != source) return;
          rank = std::size(e);
          if (rank != S::rank) return;
          std::copy(std::begin(e), std::end(e), out.begin());
          found = true;
        }(in),
        ...);
    if (!found)
      throw shape_error(std::string(who) + ": program output " + std::to_string(index) + " has rank " +
                        std::to_string(rank) + ", its node " + std::to_string(S::rank));
    return out;
  }
  template <class U, class Out, class Flat, class... In>
  void run_cpu(const Out& out, const Flat& flat, const In&... in) const {
    const std::array<std::size_t, sizeof...(In) + 1> elements{in.size()..., 0};
    std::size_t offset = 0;
    for (std::size_t k = 0; k < index; ++k) {
      const std::size_t s = program->output_sources()[k];
      offset += s == runtime_program::scalar_output ? 1 : elements.at(s);
    }
    if (out.size()) std::memcpy(out.data(), flat.data() + offset, out.size() * sizeof(U));
  }

  // The adjoint g of this output flows to each floating operand through the program's VJP for this
  // output, run on the operands and g (one more program run per output differentiated through).
  template <class G, class Y, class Run, class... A>
  auto gradient(const G& g, const Y&, const Run&, const A&... a) const {
    const auto back = program->vjp(index);
    const auto run = make_kernel(program_run_op<T>{back}, source_site::current(), a..., g);
    return gradient_terms<A...>(back, run, std::index_sequence_for<A...>{}, a..., g);
  }

  // J t through the program's JVP for this output: the VJP differentiated with respect to its
  // adjoint input, on which it depends linearly (the zeros bound to that input are not read for
  // the value). Arguments: y, the tangents of the operands (run, a...), then the operands.
  template <class Y, class... X>
    requires(sizeof...(X) >= 2 && sizeof...(X) % 2 == 0)
  auto tangent(const Y& y, const X&... x) const {
    const auto all = tie_plain(x...);
    return tangent_parts(y, all, std::make_index_sequence<sizeof...(X) / 2 - 1>{});
  }

 private:
  template <std::size_t K, std::size_t N>
  static constexpr std::size_t floating_position(const std::array<bool, N>& floating) {
    std::size_t p = 0;
    for (std::size_t k = 0; k < K; ++k) p += floating[k];
    return p;
  }
  template <class... A, class Run, std::size_t... K, class... Ops>
  static auto gradient_terms(const std::shared_ptr<const runtime_program>& back, const Run& run,
                             std::index_sequence<K...>, const Ops&... ops) {
    constexpr std::array<bool, sizeof...(A)> floating{std::is_floating_point_v<value_type_of<A>>...};
    return tuple_of(no_gradient{}, adjoint_of<A>(back, run, floating_position<K>(floating), ops...)...);
  }
  template <class A, class Run, class... Ops>
  static auto adjoint_of(const std::shared_ptr<const runtime_program>& back, const Run& run, std::size_t position,
                         const Ops&... ops) {
    if constexpr (!std::is_floating_point_v<value_type_of<A>>) return no_gradient{};
    else
      return make_kernel(program_output_op<value_type_of<A>, shape_of<A>>{back, 1 + position}, source_site::current(),
                         run, ops...);
  }

  template <class TA, class A>
  static auto tangent_or_zero(const TA& ta, const A& a) {
    if constexpr (!std::is_floating_point_v<value_type_of<A>>) return std::tuple<>{};
    else if constexpr (is_no_gradient_v<TA>) return std::tuple{expand_as(zero<value_type_of<A>>{}, a)};
    else if constexpr (std::is_same_v<shape_of<TA>, shape_of<A>>) return std::tuple{ta};
    else return std::tuple{expand_as(ta, a)};
  }
  template <class Y, class All, std::size_t... I>
  auto tangent_parts(const Y& y, const All& all, std::index_sequence<I...>) const {
    constexpr std::size_t n = sizeof...(I);
    using tangents = std::tuple<std::remove_cvref_t<decltype(get<1 + I>(all))>...>;
    if constexpr ((is_no_gradient_v<std::tuple_element_t<I, tangents>> && ...)) {
      return no_gradient{};
    } else {
      const auto forward = program->jvp(index);
      const auto gbar = expand_as(zero<T>{}, y);
      const auto floating_tangents = std::tuple_cat(tangent_or_zero(get<1 + I>(all), get<n + 2 + I>(all))...);
      return std::apply(
          [&](const auto&... t) {
            const auto run = make_kernel(program_run_op<T>{forward}, source_site::current(), get<n + 2 + I>(all)..., gbar, t...);
            return make_kernel(program_output_op<T, S>{forward, 1}, source_site::current(), run, get<n + 2 + I>(all)..., gbar, t...);
          },
          floating_tangents);
    }
  }
};

}  // namespace ops

namespace detail::program {

// The leaf types of E, in post-order.
template <class E>
using leaves_of_t = nodes_where_t<is_leaf_node, E>;

// Whether grad may take the program's route: every floating value the loss reads and every leaf
// differentiated for has the loss's dtype (the program's outputs share one buffer of it).
template <class E, class Leaves, class... Wrt>
struct program_applies;
// A model with a node that has no graph op (ir/to_graph.hpp) cannot become a program.
template <class List>
struct has_node_without_graph_form;
template <class... X>
struct has_node_without_graph_form<type_list<X...>> : std::bool_constant<(!has_graph_form<X>() || ...)> {};

template <class E, class... L, class... Wrt>
struct program_applies<E, type_list<L...>, Wrt...> {
  using T = value_type_of<E>;
  static constexpr bool value = std::is_floating_point_v<T> &&
                                !has_node_without_graph_form<typename post_order<type_list<>, E>::type>::value &&
                                ((!std::is_floating_point_v<value_type_of<L>> || std::is_same_v<value_type_of<L>, T>) && ...) &&
                                (std::is_same_v<value_type_of<Wrt>, T> && ...);
};

}  // namespace detail::program

namespace detail::program {
// Output `output` of the program as leaf's gradient, or zeros where the loss does not read the leaf.
// A function of its own, not a lambda in value_and_gradients: its instances (one per leaf) are
// then named after the leaves, not after the loss.
template <bool InLoss, class T, class Leaf, class Run, class... L>
auto gradient_output(const std::shared_ptr<const runtime_program>& program, std::size_t output, const Leaf& leaf,
                     const Run& run, const L&... leaves) {
  if constexpr (!InLoss) return expand_as(zero<T>{}, leaf);
  else return make_kernel(ops::program_output_op<T, shape_of<Leaf>>{program, output}, source_site::current(), run, leaves...);
}

// The loss's value (when WithValue) and its gradients, all outputs of one program run.
template <bool WithValue, expression E, expression... Wrt>
auto value_and_gradients(const E& loss, const Wrt&... wrt) {
  static_assert(detail::differentiated_expression_is_scalar<E>::value,
                "symflow: grad differentiates a scalar (rank-0) expression; reduce it first, e.g. sum(e)");
  static_assert((detail::differentiable_leaf<Wrt>::value && ...),
                "symflow: grad differentiates with respect to floating-point placeholders and variables only");
  using T = value_type_of<E>;
  return [&]<class... L>(type_list<L...>) {
    std::vector<found_leaf> found;
    lowering_key& key = scratch_lowering_key();
    {
      lowering_key_recorder recorder(key);
      find_leaves(loss, found, recorder);
    }
    static constexpr std::array<std::size_t, sizeof...(Wrt)> at{index_in<Wrt, type_list<L...>>::value...};
    // Output 1 + j is the gradient for the j-th differentiated leaf found in the loss.
    static constexpr std::array<std::size_t, sizeof...(Wrt)> output = [] {
      std::array<std::size_t, sizeof...(Wrt)> o{};
      std::size_t next = 1;
      for (std::size_t i = 0; i < o.size(); ++i)
        if (at[i] < sizeof...(L)) o[i] = next++;
      return o;
    }();
    std::vector<std::size_t> differentiated;
    for (std::size_t k : at)
      if (k < sizeof...(L)) differentiated.push_back(k);
    program_memo& memo = program_memo_for<E, Wrt...>();
    std::shared_ptr<const runtime_program> program = memo.find(key);
    if (!program) {
      const lowering_key built_from = key;
      program = gradient_program(to_graph(loss), {std::string(L::name.view())...}, differentiated);
      memo.keep(built_from, program);
    }
    const auto run = make_kernel(ops::program_run_op<T>{program}, source_site::current(), found_as<L>(found)...);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (WithValue) {
        const auto value = make_kernel(ops::program_output_op<T, shape<>>{program, 0}, source_site::current(), run,
                                       found_as<L>(found)...);
        return tuple_of(value, gradient_output<(at[I] < sizeof...(L)), T>(program, output[I], wrt, run, found_as<L>(found)...)...);
      } else if constexpr (sizeof...(Wrt) == 1) {
        return gradient_output<(at[0] < sizeof...(L)), T>(program, output[0], wrt..., run, found_as<L>(found)...);
      } else {
        return tuple_of(gradient_output<(at[I] < sizeof...(L)), T>(program, output[I], wrt, run, found_as<L>(found)...)...);
      }
    }(std::index_sequence_for<Wrt...>{});
  }(leaves_of_t<E>{});
}
}  // namespace detail::program

// A scalar expression's value as output 0 of a program computing it (what eval runs for the
// values of large models; see detail::evaluated_by_program in eval/cpu/eval.hpp).
template <expression E>
auto value_by_program(const E& e) {
  static_assert(shape_of<E>::rank == 0, "symflow: value_by_program computes a scalar (rank-0) expression");
  return std::get<0>(detail::program::value_and_gradients<true>(e));  // the value, no gradients
}

// The gradients of a scalar loss with respect to leaves, computed by a runtime program: the loss's
// graph, differentiated by the ops' runtime rules when this is called (cached by the graph's
// structure), run once per evaluation that reads any of them.
template <expression E, expression... Wrt>
auto grad_by_program(const E& loss, const Wrt&... wrt) {
  return detail::program::value_and_gradients<false>(loss, wrt...);
}
// The loss's value and its gradients, all from one run of the program (the value is its output 0).
template <expression E, expression... Wrt>
auto value_and_grad_by_program(const E& loss, const Wrt&... wrt) {
  return detail::program::value_and_gradients<true>(loss, wrt...);
}

// The routes the symbolic and evaluation layers leave open (symbolic/gradient.hpp,
// eval/program_route.hpp), taken for the models a program can differentiate.
namespace detail {
template <class E, class... Leaves>
  requires(gradient_by_sweep<E> && program::program_applies<E, program::leaves_of_t<E>, Leaves...>::value)
struct gradient_program_route<E, Leaves...> : std::true_type {
  static auto grad(const E& loss, const Leaves&... leaves) { return grad_by_program(loss, leaves...); }
  static auto value_and_grad(const E& loss, const Leaves&... leaves) {
    return value_and_grad_by_program(loss, leaves...);
  }
};
// eval computes the scalar values of the models grad would give to a program with a program too:
// a deep model's loss, evaluated for a progress line, would otherwise cost the compiler more than
// its gradient does. (Asked of every expression eval is given: only scalars are measured, once each.)
template <class E, bool Scalar = shape_of<E>::rank == 0>
struct large_scalar_model : std::false_type {};
template <class E>
struct large_scalar_model<E, true> : std::bool_constant<gradient_program_route<E>::value> {};
template <class E>
struct evaluated_by_program<E, std::enable_if_t<large_scalar_model<E>::value>> : std::true_type {
  static auto rewrite(const E& e) { return value_by_program(e); }
};
}  // namespace detail

}  // namespace symflow
