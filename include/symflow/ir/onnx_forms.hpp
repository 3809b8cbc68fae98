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
