#pragma once
// while: a loop that runs its body while a condition holds, at most max_iterations times, and
// while_adjoint, the loop its gradient runs backwards.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "signature.hpp"
#include "steps.hpp"

namespace symflow {
namespace control_flow {

struct while_flow {
  static constexpr std::string_view name = "while";
  static constexpr std::string_view file = "while_loop.hpp";  // for the op reference
  static constexpr std::string_view doc =
      "while(init, c...), attributes cond and body (graphs) and max_iterations (an integer >= 0): "
      "state = init; while cond(state, c...) is true and fewer than max_iterations steps ran, state = "
      "body(state, c...); the result is the last state (jax.lax.while_loop, tf.while_loop with "
      "maximum_iterations, ONNX Loop). The limit is required, so that no graph runs forever: "
      "reaching it ends the loop as a false condition would. cond's one output is a bool scalar; "
      "body's one output is the next state, of the state's dtype and extents. Both are graphs "
      "without parameters whose inputs take (state, c...) in order. Gradient: with respect to init "
      "and every floating c (while_adjoint runs the loop again, keeping each state, then the body's "
      "own gradient from the last step to the first); the condition passes no gradient. Example: "
      "cond(s) = s < 100, body(s) = 2 s from init 3 gives 192.";
  static constexpr std::size_t min_inputs = 1, max_inputs = std::size_t(-1);
  static constexpr std::array attributes{flow_attribute_spec{"cond", flow_attribute::graph},
                                         flow_attribute_spec{"body", flow_attribute::graph},
                                         flow_attribute_spec{"max_iterations", flow_attribute::integer}};

  static std::size_t limit(const graph_node& n, const std::string& who) {
    const std::int64_t v = std::get<std::int64_t>(*n.attribute("max_iterations"));
    if (v < 0) throw graph_error(who + ": max_iterations is " + std::to_string(v) + ", not >= 0");
    return std::size_t(v);
  }

  static graph_type result_type(const graph_node& n, const std::vector<graph_type>& in, const std::string& who) {
    limit(n, who);
    check_call(n, "cond", in, 1, who);
    check_call(n, "body", in, 1, who);
    const graph_type c = output_type(body_of(n, "cond"), 0), next = output_type(body_of(n, "body"), 0);
    if (!is_condition_type(c)) throw graph_error(who + ": cond gives " + graph_type_string(c) + ", not a bool scalar");
    if (!type_fits(in[0], next))
      throw graph_error(who + ": the body turns a state of " + graph_type_string(in[0]) + " into " +
                        graph_type_string(next) + "; a state keeps its dtype and shape");
    return common_type(in[0], next);
  }

  template <class R>
  static runtime_extents extents(R& r, const graph_node& n, const std::vector<dtype>& types,
                                 const std::vector<runtime_extents>& in, const std::string& who) {
    const runtime_extents next = r.extents(body_of(n, "body"), types, in).at(0);
    if (next != in[0])
      throw shape_error(who + ": the body turns a state of extents " + format_extents(in[0]) + " into " +
                        format_extents(next) + "; a state keeps its extents");
    if (element_count(r.extents(body_of(n, "cond"), types, in).at(0)) != 1)
      throw shape_error(who + ": cond gives more than one element");
    return in[0];
  }

  // Runs the loop from in[0]; `each(state)` sees every state the body is called on, before the
  // call. Returns the number of steps.
  template <class R, class Each>
  static std::size_t loop(R& r, const graph_node& n, const runtime_array& state, const std::vector<runtime_array>& in,
                          const std::string& who, Each&& each) {
    const graph &cond = body_of(n, "cond"), &body = body_of(n, "body");
    std::vector<runtime_array> args(in.begin(), in.end());
    copy_value(state, in[0], who);
    args[0] = state;
    const std::size_t max = limit(n, who);
    std::size_t steps = 0;
    for (; steps < max && *static_cast<const bool*>(r.call(cond, args).at(0).bytes()); ++steps) {
      each(state);
      copy_value(state, array_of(r.call(body, args).at(0)), who);
    }
    return steps;
  }

  template <class R>
  static void run(R& r, const graph_node& n, const runtime_array& out, const std::vector<runtime_array>& in,
                  const std::string& who) {
    loop(r, n, out, in, who, [](const runtime_array&) {});
  }

  template <class D, class H>
  static std::vector<std::optional<H>> derivative(D& d, const graph_node& n, const H& gy, const H&,
                                                  const std::vector<H>& x) {
    std::vector<std::optional<H>> out(x.size());
    if (!d.floating(x[0])) return out;  // an integer state carries no gradient
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (!d.floating(x[k])) continue;
      std::vector<std::size_t> wrt{0};
      if (k > 0) wrt.push_back(k);
      std::vector<H> operands(x.begin(), x.end());
      operands.push_back(gy);
      out[k] = d.apply("while_adjoint", operands,
                       {{"cond", *n.attribute("cond")}, {"body", *n.attribute("body")},
                        {"max_iterations", *n.attribute("max_iterations")},
                        {"adjoint", subgraph{d.vjp(body_of(n, "body"), wrt)}}, {"wrt", std::int64_t(k)}},
                       n.name + "/adjoint");
    }
    return out;
  }
};

struct while_adjoint_flow {
  static constexpr std::string_view name = "while_adjoint";
  static constexpr std::string_view file = "while_loop.hpp";  // for the op reference
  static constexpr std::string_view doc =
      "while_adjoint(init, c..., g), attributes cond, body, max_iterations (the while's), adjoint (a "
      "graph) and wrt (an integer): the adjoint of the while's operand wrt (0: init, 1 + j: c[j]) for "
      "the adjoint g of its result, as the while's gradient builds it. It runs the loop again, keeping "
      "the state before each step, then calls adjoint (inputs (state, c..., adjoint of the next "
      "state); outputs the adjoint of the state and, when wrt > 0, of operand wrt) from the last "
      "step to the first, summing a c adjoint over the steps. Not differentiable itself. Example: "
      "for the while of while's example (3 doubled six times to 192) and g = 1, the adjoint of init is "
      "64.";
  static constexpr std::size_t min_inputs = 2, max_inputs = std::size_t(-1);
  static constexpr std::array attributes{
      flow_attribute_spec{"cond", flow_attribute::graph}, flow_attribute_spec{"body", flow_attribute::graph},
      flow_attribute_spec{"max_iterations", flow_attribute::integer},
      flow_attribute_spec{"adjoint", flow_attribute::graph}, flow_attribute_spec{"wrt", flow_attribute::integer}};

  static graph_type result_type(const graph_node& n, const std::vector<graph_type>& in, const std::string& who) {
    const std::vector<graph_type> loop_in(in.begin(), in.end() - 1);
    while_flow::result_type(n, loop_in, who);
    const std::size_t k = wrt_operand(n, loop_in.size(), who);
    std::vector<graph_type> args = loop_in;
    args.push_back(in[0]);
    check_call(n, "adjoint", args, k == 0 ? 1 : 2, who);
    const graph& adjoint = body_of(n, "adjoint");
    if (!type_fits(in[0], output_type(adjoint, 0)) || (k > 0 && !type_fits(in[k], output_type(adjoint, 1))))
      throw graph_error(who + ": the adjoint graph's outputs do not fit the state and operand " + std::to_string(k));
    if (!type_fits(in[0], in.back()))
      throw graph_error(who + ": the adjoint g is " + graph_type_string(in.back()) + ", the state " + graph_type_string(in[0]));
    return in[k];
  }

  template <class R>
  static runtime_extents extents(R& r, const graph_node& n, const std::vector<dtype>& types,
                                 const std::vector<runtime_extents>& in, const std::string& who) {
    const std::vector<dtype> loop_types(types.begin(), types.end() - 1);
    const std::vector<runtime_extents> loop_in(in.begin(), in.end() - 1);
    while_flow::extents(r, n, loop_types, loop_in, who);
    if (in.back() != in[0])
      throw shape_error(who + ": the adjoint g has extents " + format_extents(in.back()) + ", the state " + format_extents(in[0]));
    return in[wrt_operand(n, loop_in.size(), who)];
  }

  template <class R>
  static void run(R& r, const graph_node& n, const runtime_array& out, const std::vector<runtime_array>& in,
                  const std::string& who) {
    const std::size_t m = in.size() - 1, k = wrt_operand(n, m, who);
    const std::vector<runtime_array> loop_in(in.begin(), in.begin() + std::ptrdiff_t(m));
    // The states the body was called on, in order.
    std::vector<runtime_tensor> states;
    runtime_tensor last(in[0].type, in[0].extents);
    while_flow::loop(r, n, array_of(last), loop_in, who, [&](const runtime_array& s) {
      runtime_tensor kept(s.type, s.extents);
      copy_value(array_of(kept), s, who);
      states.push_back(std::move(kept));
    });
    runtime_tensor carried(in[0].type, in[0].extents);
    copy_value(array_of(carried), in[m], who);
    if (k > 0 && element_count(out.extents)) std::memset(out.data, 0, element_count(out.extents) * dtype_size(out.type));
    const graph& adjoint = body_of(n, "adjoint");
    std::vector<runtime_array> args = loop_in;
    args.push_back(array_of(carried));
    for (std::size_t t = states.size(); t-- > 0;) {
      args[0] = array_of(states[t]);
      const std::vector<runtime_tensor>& adjoints = r.call(adjoint, args);
      if (k > 0) add_into(out, array_of(adjoints.at(1)), who);
      copy_value(array_of(carried), array_of(adjoints.at(0)), who);
    }
    if (k == 0) copy_value(out, array_of(carried), who);
  }
};

}  // namespace control_flow
}  // namespace symflow
