#pragma once
// scan: a loop over the leading axis of a sequence, carrying a state (the runtime graph's form of
// nn::scan), and scan_adjoint, the loop its gradient runs backwards (backpropagation through time).
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "onnx_flow.hpp"
#include "signature.hpp"
#include "steps.hpp"

namespace symflow {
namespace control_flow {

struct scan_flow {
  static constexpr std::string_view name = "scan";
  static constexpr std::string_view file = "scan.hpp";  // for the op reference
  static constexpr std::string_view doc =
      "scan(init, xs, c...), attribute body (a graph): a loop over the leading axis of xs carrying a "
      "state (jax.lax.scan; ONNX Scan with one state, one scan input and the state as its scan "
      "output). Step t calls body(state, xs[t], c...) and its one output is the next state, of the state's dtype and extents; the first "
      "state is init. The result stacks the states after each step: [T, state...] for T steps (T = 0 "
      "gives an empty result); its last row is the final state. Operands c are passed unchanged to "
      "every step (the weights of a recurrent cell). The body is a graph without parameters whose "
      "inputs take (state, xs[t], c...) in order. Gradient: with respect to init, xs and every c, by "
      "backpropagation through time (scan_adjoint runs the body's own gradient from the last step "
      "to the first); second derivatives through a scan are not supported. Example: body(h, x) = h + "
      "x over xs = [1, 2, 3] from init 0 gives [1, 3, 6].";
  static constexpr std::size_t min_inputs = 2, max_inputs = std::size_t(-1);
  static constexpr std::array attributes{flow_attribute_spec{"body", flow_attribute::graph}};

  static std::vector<graph_type> body_arguments(const std::vector<graph_type>& in) {
    std::vector<graph_type> args{in[0], step_type(in[1])};
    args.insert(args.end(), in.begin() + 2, in.end());
    return args;
  }

  static graph_type result_type(const graph_node& n, const std::vector<graph_type>& in, const std::string& who) {
    if (in[1].shape.empty()) throw graph_error(who + ": the sequence xs is a scalar; a scan steps along its axis 0");
    check_call(n, "body", body_arguments(in), 1, who);
    const graph_type next = output_type(body_of(n, "body"), 0);
    if (!type_fits(in[0], next))
      throw graph_error(who + ": the body turns a state of " + graph_type_string(in[0]) + " into " +
                        graph_type_string(next) + "; a state keeps its dtype and shape");
    graph_type out = common_type(in[0], next);
    out.shape.insert(out.shape.begin(), in[1].shape[0]);
    return out;
  }

  template <class R>
  static runtime_extents extents(R& r, const graph_node& n, const std::vector<dtype>& types,
                                 const std::vector<runtime_extents>& in, const std::string& who) {
    std::vector<runtime_extents> args{in[0], runtime_extents(in[1].begin() + 1, in[1].end())};
    args.insert(args.end(), in.begin() + 2, in.end());
    const runtime_extents next = r.extents(body_of(n, "body"), types, args).at(0);
    if (next != in[0])
      throw shape_error(who + ": the body turns a state of extents " + format_extents(in[0]) + " into " +
                        format_extents(next) + "; a state keeps its extents");
    runtime_extents out = in[0];
    out.insert(out.begin(), in[1][0]);
    return out;
  }

  template <class R>
  static void run(R& r, const graph_node& n, const runtime_array& out, const std::vector<runtime_array>& in,
                  const std::string& who) {
    const graph& body = body_of(n, "body");
    std::vector<runtime_array> args(in.begin(), in.end());  // state, x, c...
    for (std::size_t t = 0; t < in[1].extents[0]; ++t) {
      args[1] = step_of(in[1], t);
      const runtime_array state = step_of(out, t);
      copy_value(state, array_of(r.call(body, args).at(0)), who);
      args[0] = state;
    }
  }

  // ONNX Scan with one state and one scan input: the body takes (state, xs[t]) and gives the next
  // state twice, as the state and as the scan output, whose stack is the result; the operands c
  // are read from the enclosing graph by name. Scan's final state (output 0) is left unnamed.
  static void write_onnx(onnx_flow_writer& w) {
    std::vector<std::optional<std::string>> outer{std::nullopt, std::nullopt};
    for (std::size_t k = 2; k < w.operand_count(); ++k) outer.push_back(w.operand(k));
    w.add_with_bodies("Scan", {w.operand(0), w.operand(1)}, {{"num_scan_inputs", std::int64_t(1)}},
                      {{"body", "body", std::move(outer), {0, 0}}}, {false, true}, 1);
  }

  // Reads the Scans this op is: one state, one scan input along axis 0 forwards, and no scan
  // output or one that is the next state itself (ONNX's own scan tests, and what write_onnx
  // writes). The values the body reads from the enclosing graph become the operands c.
  static constexpr std::array<std::string_view, 1> onnx_reads{"Scan"};
  static void read_onnx(onnx_flow_reader& r) {
    using value = onnx_node_reader::value;
    if (r.opset() < 9) r.refuse("Scan before opset 9 (with a batch axis and sequence_lens) is not read");
    if (r.integer("num_scan_inputs", 0) != 1 || r.input_count() != 2)
      r.refuse("only a Scan of one state and one scan input is read (" + std::to_string(r.input_count()) +
               " inputs, num_scan_inputs " + std::to_string(r.integer("num_scan_inputs", 0)) + ")");
    for (std::string_view key : {"scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"})
      for (std::int64_t v : r.integers(key, {}))
        if (v != 0) r.refuse(std::string(key) + " " + std::to_string(v) + " (only axis 0, forwards, is read)");
    const value init = r.input(0), xs = r.input(1);
    if (r.extents_of(xs).empty()) r.refuse("the scan input is a scalar");
    onnx_imported_body b = r.body("body", {r.type_of(init), step_type(r.type_of(xs))});
    const std::size_t outputs = b.body.outputs.size();
    if (outputs == 0 || outputs > 2)
      r.refuse("the body has " + std::to_string(outputs) + " outputs; the state and at most one scan output are read");
    if (outputs == 2 && b.body.outputs[1] != b.body.outputs[0])
      r.refuse("its scan output is not the next state (only scans whose scan output is the state are read)");
    b.body.outputs.resize(1);
    std::vector<value> operands{init, xs};
    operands.insert(operands.end(), b.captured.begin(), b.captured.end());
    const value states = r.apply_with_bodies(name, std::move(operands), {{"body", std::move(b.body)}});
    if (outputs == 2) r.result(states, 1);
    if (!r.wants_output(0)) return;
    // The final state: the last row of [init, states...], which is init after no steps.
    const value all = r.apply("concat", {r.apply("expand_dims", {init}, {{"axes", std::vector<std::int64_t>{0}}}), states},
                              {{"axis", std::int64_t(0)}});
    const value last = r.apply("slice", {r.apply("flip", {all}, {{"axis", std::int64_t(0)}})},
                               {{"axis", std::int64_t(0)}, {"begin", std::int64_t(0)}, {"end", std::int64_t(1)}});
    r.result(r.apply("reshape_as", {last, init}), 0);
  }

  // d/d operand k: a scan_adjoint node running the body's gradient for k backwards over the steps.
  template <class D, class H>
  static std::vector<std::optional<H>> derivative(D& d, const graph_node& n, const H& gy, const H& y,
                                                  const std::vector<H>& x) {
    std::vector<std::optional<H>> out(x.size());
    if (!d.floating(x[0])) return out;  // an integer state carries no gradient
    const graph& body = body_of(n, "body");
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (!d.floating(x[k])) continue;
      std::vector<std::size_t> wrt{0};
      if (k > 0) wrt.push_back(k);
      std::vector<H> operands(x.begin(), x.end());
      operands.push_back(y);
      operands.push_back(gy);
      out[k] = d.apply("scan_adjoint", operands,
                       {{"body", subgraph{d.vjp(body, wrt)}}, {"wrt", std::int64_t(k)}}, n.name + "/adjoint");
    }
    return out;
  }
};

struct scan_adjoint_flow {
  static constexpr std::string_view name = "scan_adjoint";
  static constexpr std::string_view file = "scan.hpp";  // for the op reference
  static constexpr std::string_view doc =
      "scan_adjoint(init, xs, c..., states, g), attributes body (a graph) and wrt (an integer): the "
      "adjoint of a scan's operand wrt (0: init, 1: xs, 2 + j: c[j]) for the adjoint g of its result "
      "states, as the scan's gradient builds it. The body is the scan body's vector-Jacobian product: "
      "inputs (state, xs[t], c..., adjoint of the next state), outputs the adjoint of the state and, "
      "when wrt > 0, of operand wrt. Steps run from the last to the first, each adding g[t] to the "
      "carried adjoint; an xs adjoint is stacked per step, a c adjoint summed over the steps. Not "
      "differentiable itself. Example: for the scan body(h, x) = h x over xs = [2, 3] from init "
      "1 (states [2, 6]) and g = [0, 1], the adjoint of init is 6 (= 2 x 3).";
  static constexpr std::size_t min_inputs = 4, max_inputs = std::size_t(-1);
  static constexpr std::array attributes{flow_attribute_spec{"body", flow_attribute::graph},
                                         flow_attribute_spec{"wrt", flow_attribute::integer}};

  static graph_type result_type(const graph_node& n, const std::vector<graph_type>& in, const std::string& who) {
    const std::size_t m = in.size() - 2;  // the scan's operands
    const std::size_t k = wrt_operand(n, m, who);
    std::vector<graph_type> scan_in(in.begin(), in.begin() + std::ptrdiff_t(m));
    if (scan_in[1].shape.empty()) throw graph_error(who + ": the sequence xs is a scalar");
    std::vector<graph_type> args = scan_flow::body_arguments(scan_in);
    args.push_back(in[0]);
    check_call(n, "body", args, k == 0 ? 1 : 2, who);
    const graph& body = body_of(n, "body");
    if (!type_fits(in[0], output_type(body, 0)))
      throw graph_error(who + ": the body's state adjoint is " + graph_type_string(output_type(body, 0)) +
                        ", the state is " + graph_type_string(in[0]));
    if (k > 0 && !type_fits(args[k], output_type(body, 1)))
      throw graph_error(who + ": the body's adjoint of operand " + std::to_string(k) + " is " +
                        graph_type_string(output_type(body, 1)) + ", the operand's step is " + graph_type_string(args[k]));
    return scan_in[k];
  }

  template <class R>
  static runtime_extents extents(R&, const graph_node& n, const std::vector<dtype>&, const std::vector<runtime_extents>& in,
                                 const std::string& who) {
    const std::size_t m = in.size() - 2;
    if (in[m] != in[m + 1] || in[m].empty() || in[m][0] != in[1].at(0))
      throw shape_error(who + ": the states " + format_extents(in[m]) + " and their adjoint " + format_extents(in[m + 1]) +
                        " must both be [T, state...] for the " + std::to_string(in[1].at(0)) + " steps of xs");
    return in[wrt_operand(n, m, who)];
  }

  template <class R>
  static void run(R& r, const graph_node& n, const runtime_array& out, const std::vector<runtime_array>& in,
                  const std::string& who) {
    const graph& body = body_of(n, "body");
    const std::size_t m = in.size() - 2, k = wrt_operand(n, m, who), steps = in[1].extents[0];
    const runtime_array& states = in[m];
    const runtime_array& g = in[m + 1];
    runtime_tensor carried = zeros(in[0].type, in[0].extents);
    if (k != 1 && element_count(out.extents)) std::memset(out.data, 0, element_count(out.extents) * dtype_size(out.type));
    std::vector<runtime_array> args(in.begin(), in.begin() + std::ptrdiff_t(m));
    args.push_back(array_of(carried));
    for (std::size_t t = steps; t-- > 0;) {
      add_into(array_of(carried), step_of(g, t), who);
      args[0] = t == 0 ? in[0] : step_of(states, t - 1);
      args[1] = step_of(in[1], t);
      const std::vector<runtime_tensor>& adjoints = r.call(body, args);
      if (k == 1) copy_value(step_of(out, t), array_of(adjoints.at(1)), who);
      else if (k > 1) add_into(out, array_of(adjoints.at(1)), who);
      copy_value(array_of(carried), array_of(adjoints.at(0)), who);
    }
    if (k == 0) copy_value(out, array_of(carried), who);
  }
};

}  // namespace control_flow
}  // namespace symflow
