#pragma once
// cond: one of two sub-graphs, chosen by a boolean at run time.
#include <algorithm>
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

struct cond_flow {
  static constexpr std::string_view name = "cond";
  static constexpr std::string_view file = "cond.hpp";  // for the op reference
  static constexpr std::string_view doc =
      "cond(pred, x...), attributes then_branch and else_branch (graphs): then_branch(x...) where "
      "the boolean pred (a scalar, or a tensor of one element) is true, else else_branch(x...) "
      "(ONNX If, jax.lax.cond, tf.cond). Only the branch taken runs. Each branch is a graph "
      "without parameters whose inputs take x... in order and whose one output has the same dtype "
      "and rank in both; for given operands both branches must give the same extents (they are "
      "planned before pred is read). Gradient: with respect to every floating x, a cond of the two "
      "branches' own gradients on the same pred. Example: for a scalar x, cond(x > 0, x) with "
      "then_branch(v) = v and else_branch(v) = -v is |x|.";
  static constexpr std::size_t min_inputs = 1, max_inputs = std::size_t(-1);
  static constexpr std::array attributes{flow_attribute_spec{"then_branch", flow_attribute::graph},
                                         flow_attribute_spec{"else_branch", flow_attribute::graph}};

  static graph_type result_type(const graph_node& n, const std::vector<graph_type>& in, const std::string& who) {
    if (!is_condition_type(in[0]))
      throw graph_error(who + ": the condition is " + graph_type_string(in[0]) + ", not a bool scalar");
    const std::vector<graph_type> args(in.begin() + 1, in.end());
    check_call(n, "then_branch", args, 1, who);
    check_call(n, "else_branch", args, 1, who);
    const graph_type a = output_type(body_of(n, "then_branch"), 0), b = output_type(body_of(n, "else_branch"), 0);
    if (a.type != b.type || a.shape.size() != b.shape.size() || !type_fits(a, b))
      throw graph_error(who + ": then_branch gives " + graph_type_string(a) + ", else_branch " + graph_type_string(b) +
                        "; both branches give one dtype and shape");
    return common_type(a, b);
  }

  template <class R>
  static runtime_extents extents(R& r, const graph_node& n, const std::vector<dtype>& types,
                                 const std::vector<runtime_extents>& in, const std::string& who) {
    if (element_count(in[0]) != 1)
      throw shape_error(who + ": the condition has extents " + format_extents(in[0]) + ", not one element");
    const std::vector<dtype> arg_types(types.begin() + 1, types.end());
    const std::vector<runtime_extents> args(in.begin() + 1, in.end());
    const runtime_extents a = r.extents(body_of(n, "then_branch"), arg_types, args).at(0);
    const runtime_extents b = r.extents(body_of(n, "else_branch"), arg_types, args).at(0);
    if (a != b)
      throw shape_error(who + ": then_branch gives extents " + format_extents(a) + ", else_branch " + format_extents(b) +
                        "; both branches give the same extents");
    return a;
  }

  template <class R>
  static void run(R& r, const graph_node& n, const runtime_array& out, const std::vector<runtime_array>& in,
                  const std::string& who) {
    const bool taken = *static_cast<const bool*>(in[0].data);
    const std::vector<runtime_array> args(in.begin() + 1, in.end());
    copy_value(out, array_of(r.call(body_of(n, taken ? "then_branch" : "else_branch"), args).at(0)), who);
  }

  // ONNX If: the branches take no inputs and read the operands x from the enclosing graph by name.
  static void write_onnx(onnx_flow_writer& w) {
    std::vector<std::optional<std::string>> outer;
    for (std::size_t k = 1; k < w.operand_count(); ++k) outer.push_back(w.operand(k));
    w.add_with_bodies("If", {w.operand(0)}, {},
                      {{"then_branch", "then_branch", outer, {0}}, {"else_branch", "else_branch", outer, {0}}}, {true}, 0);
  }

  // Reads an If of one output: the values either branch reads from the enclosing graph become
  // the operands x, each once, and both branches take all of them.
  static constexpr std::array<std::string_view, 1> onnx_reads{"If"};
  static void read_onnx(onnx_flow_reader& r) {
    using value = onnx_node_reader::value;
    const value pred = r.input(0);
    if (!is_condition_type(r.type_of(pred))) r.refuse("the condition is " + graph_type_string(r.type_of(pred)) + ", not one bool");
    onnx_imported_body branches[2] = {r.body("then_branch", {}), r.body("else_branch", {})};
    std::vector<value> operands{pred};
    std::vector<call_input> order;
    for (const onnx_imported_body& b : branches) {
      if (b.body.outputs.size() != 1)
        r.refuse("a branch has " + std::to_string(b.body.outputs.size()) + " outputs; an If of one output is read");
      for (std::size_t k = 0; k < b.captured.size(); ++k) {
        const graph_leaf& leaf = b.body.inputs[k];
        if (std::any_of(order.begin(), order.end(), [&](const call_input& c) { return c.name == leaf.name; })) continue;
        order.push_back({leaf.name, leaf.type});
        operands.push_back(b.captured[k]);
      }
    }
    r.result(r.apply_with_bodies(name, std::move(operands),
                                 {{"then_branch", with_inputs(branches[0].body, order)},
                                  {"else_branch", with_inputs(branches[1].body, order)}}));
  }

  // d/d x[k]: cond(pred, x..., g) over the two branches' vector-Jacobian products for input k.
  template <class D, class H>
  static std::vector<std::optional<H>> derivative(D& d, const graph_node& n, const H& gy, const H&,
                                                  const std::vector<H>& x) {
    std::vector<std::optional<H>> out(x.size());
    std::vector<H> operands(x.begin(), x.end());
    operands.push_back(gy);
    for (std::size_t k = 1; k < x.size(); ++k) {
      if (!d.floating(x[k])) continue;
      out[k] = d.apply("cond", operands,
                       {{"then_branch", subgraph{d.vjp(body_of(n, "then_branch"), {k - 1})}},
                        {"else_branch", subgraph{d.vjp(body_of(n, "else_branch"), {k - 1})}}},
                       n.name + "/adjoint");
    }
    return out;
  }
};

}  // namespace control_flow
}  // namespace symflow
