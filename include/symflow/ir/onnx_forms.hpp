#pragma once
// Each listed op's ONNX form (expr/onnx_form.hpp), found by op name: read from the op's own file
// through the op list, as the schemas are (op_registry.hpp). Nothing here names an op. The exporter
// (io/onnx.hpp) calls these; docs and tests ask which ops have one.
#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "../expr/onnx_form.hpp"
#include "op_registry.hpp"

namespace symflow {

using onnx_form = void (*)(onnx_node_writer&);

// The ONNX domain of the model-local functions that stand for symflow ops whose forms are
// compositions (version 1): the exporter writes a call of function "gelu" (or "gelu__2", ...) for
// such a node, the importer reads the call back as the op.
inline constexpr std::string_view onnx_function_domain = "symflow";

namespace detail {
// An op whose form is one ONNX node over the same operands, in order.
template <class Op>
void write_single_onnx_node(onnx_node_writer& w) {
  std::vector<std::string> inputs;
  for (std::size_t i = 0; i < w.operand_count(); ++i) inputs.push_back(w.operand(i));
  w.add(Op::onnx_op, std::move(inputs), {}, true);
}

template <class Op>
constexpr onnx_form onnx_form_of() {
  if constexpr (requires { Op::onnx_op; }) return &write_single_onnx_node<Op>;
  else if constexpr (requires(onnx_node_writer& w) { Op::write_onnx(w); }) return &Op::write_onnx;
  else return nullptr;
}
}  // namespace detail

// An op's reading of ONNX nodes back (expr/onnx_form.hpp).
using onnx_reading = void (*)(onnx_node_reader&);

namespace detail {
// An op whose form is one ONNX node over the same operands reads it back as itself.
template <class Op>
void read_single_onnx_node(onnx_node_reader& r) {
  std::vector<onnx_node_reader::value> operands;
  for (std::size_t i = 0; i < r.input_count(); ++i) operands.push_back(r.input(i));
  r.result(r.apply(Op::name, std::move(operands)));
}

template <class Op>
void add_onnx_readings(std::vector<std::pair<std::string_view, onnx_reading>>& out) {
  if constexpr (requires(onnx_node_reader& r) {
                  Op::read_onnx(r);
                  Op::onnx_reads;
                }) {
    for (std::string_view type : Op::onnx_reads)
      if (!type.empty()) out.emplace_back(type, &Op::read_onnx);
  } else if constexpr (requires { Op::onnx_op; }) {
    if (!Op::onnx_op.empty()) out.emplace_back(Op::onnx_op, &read_single_onnx_node<Op>);
  }
}

// Every listed op's readings, sorted by ONNX op type (the first listed op wins a tie; a test
// checks there is none).
inline const std::vector<std::pair<std::string_view, onnx_reading>>& onnx_readings() {
  static const std::vector<std::pair<std::string_view, onnx_reading>> readings = [] {
    std::vector<std::pair<std::string_view, onnx_reading>> v;
    std::apply([&](auto... entry) { (add_onnx_readings<typename decltype(entry)::type>(v), ...); }, registered_ops{});
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return v;
  }();
  return readings;
}
}  // namespace detail

// The listed op's reading of ONNX op type `type`, or nullptr when no listed op reads it.
inline onnx_reading find_onnx_reading(std::string_view type) {
  const auto& readings = detail::onnx_readings();
  const auto it = std::lower_bound(readings.begin(), readings.end(), type,
                                   [](const auto& f, std::string_view name) { return f.first < name; });
  return it != readings.end() && it->first == type ? it->second : nullptr;
}

// The ONNX op types the listed ops read, sorted, with repeats when two ops read one type.
inline std::vector<std::string_view> onnx_types_read_by_ops() {
  std::vector<std::string_view> types;
  for (const auto& r : detail::onnx_readings()) types.push_back(r.first);
  std::apply([&](auto... flow) {
    auto take = [&](auto op) {
      if constexpr (requires { decltype(op)::onnx_reads; })
        for (std::string_view t : decltype(op)::onnx_reads) types.push_back(t);
    };
    (take(flow), ...);
  }, control_flow::registered{});
  std::stable_sort(types.begin(), types.end());
  return types;
}

// Control-flow ops' forms and readings (control_flow/onnx_flow.hpp), found the same way in their
// list (control_flow/list.hpp).
using onnx_flow_form = void (*)(onnx_flow_writer&);
using onnx_flow_reading = void (*)(onnx_flow_reader&);

inline onnx_flow_form find_onnx_flow_form(std::string_view op) {
  onnx_flow_form form = nullptr;
  control_flow::visit(op, [&](auto flow) {
    if constexpr (requires(onnx_flow_writer& w) { decltype(flow)::write_onnx(w); }) form = &decltype(flow)::write_onnx;
  });
  return form;
}

inline onnx_flow_reading find_onnx_flow_reading(std::string_view type) {
  onnx_flow_reading reading = nullptr;
  std::apply([&](auto... flow) {
    auto take = [&](auto op) {
      if constexpr (requires(onnx_flow_reader& r) {
                      decltype(op)::read_onnx(r);
                      decltype(op)::onnx_reads;
                    }) {
        for (std::string_view t : decltype(op)::onnx_reads)
          if (t == type && !reading) reading = &decltype(op)::read_onnx;
      }
    };
    (take(flow), ...);
  }, control_flow::registered{});
  return reading;
}

// The ONNX form of the op named `op`, or nullptr when it has none (or no such op is listed).
inline onnx_form find_onnx_form(std::string_view op) {
  static const std::vector<std::pair<std::string_view, onnx_form>> forms = [] {
    std::vector<std::pair<std::string_view, onnx_form>> v;
    std::apply([&](auto... entry) {
      (v.emplace_back(decltype(entry)::type::name, detail::onnx_form_of<typename decltype(entry)::type>()), ...);
    }, registered_ops{});
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return v;
  }();
  const auto it = std::lower_bound(forms.begin(), forms.end(), op,
                                   [](const auto& f, std::string_view name) { return f.first < name; });
  return it != forms.end() && it->first == op ? it->second : nullptr;
}

}  // namespace symflow
