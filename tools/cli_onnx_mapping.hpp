#pragma once
// The op reference's "ONNX" line: which ONNX nodes an op is exported as and which ONNX op types it is
// read back from, found from the op's own form and readings (ir/onnx_forms.hpp), never by name.
#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <symflow/ir/onnx_forms.hpp>
#include <symflow/ir/op_registry.hpp>

namespace symflow::cli {

// An ONNX writer that only records the op types a form adds. The node it presents is a typical
// one: f32 operands of extents [2, 4, 4, 2], every attribute of the schema present with a small
// value (1, [1, 1], false, 0.5, f32). A form that needs other values refuses or throws, and the
// reference then says the nodes depend on the attributes.
class recording_onnx_writer final : public onnx_flow_writer {
 public:
  recording_onnx_writer(const op_schema& s, std::size_t operands) : schema_(s), operands_(operands) {
    for (std::size_t i = 0; i < operands; ++i) names_.push_back("operand" + std::to_string(i));
  }
  std::vector<std::string> types;

  std::size_t operand_count() const override { return operands_; }
  const std::string& operand(std::size_t i) const override { return names_.at(i); }
  dtype operand_dtype(std::size_t) const override { return dtype::f32; }
  std::vector<std::int64_t> operand_extents(std::size_t) const override { return {2, 4, 4, 2}; }
  dtype result_dtype() const override { return dtype::f32; }
  std::vector<std::int64_t> result_extents() const override { return {2, 4, 4, 2}; }

  std::int64_t integer(std::string_view) const override { return 1; }
  std::vector<std::int64_t> integers(std::string_view) const override { return {1, 1}; }
  bool boolean(std::string_view) const override { return false; }
  double number(std::string_view) const override { return 0.5; }
  dtype dtype_of(std::string_view) const override { return dtype::f32; }
  bool has(std::string_view key) const override {
    return std::any_of(schema_.attributes.begin(), schema_.attributes.end(),
                       [&](const auto& a) { return a.key == key && !a.optional; });
  }

  std::string add(std::string_view op_type, std::vector<std::string>, std::vector<onnx_attribute>, bool) override {
    types.emplace_back(op_type);
    return "value" + std::to_string(types.size());
  }
  std::string int64s(const std::vector<std::int64_t>&) override { return "constant"; }
  std::string scalar(dtype, double) override { return "constant"; }
  [[noreturn]] void refuse(const std::string& why) const override { throw std::runtime_error(why); }

  const graph& body(std::string_view key) const override {
    throw std::runtime_error("no sub-graph '" + std::string(key) + "' in a recording");
  }
  std::vector<std::string> add_with_bodies(std::string_view op_type, std::vector<std::string>, std::vector<onnx_attribute>,
                                           const std::vector<onnx_body_binding>&, const std::vector<bool>& named,
                                           std::size_t) override {
    types.emplace_back(op_type);
    return std::vector<std::string>(named.size(), "value");
  }

 private:
  const op_schema& schema_;
  std::size_t operands_;
  std::vector<std::string> names_;
};

inline std::string code_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& t : items) out.append(out.empty() ? "" : ", ").append("`").append(t).append("`");
  return out;
}

// The ONNX op types that `op` is read back from (the readings of every listed op and control-flow op).
inline std::vector<std::string> onnx_types_reading_to(std::string_view op) {
  std::vector<std::string> types;
  std::apply([&](auto... entry) {
    auto take = [&]<class E>(E) {
      using type = typename E::type;
      if (type::name != op) return;
      if constexpr (requires { type::onnx_reads; }) {
        for (std::string_view t : type::onnx_reads)
          if (!t.empty()) types.emplace_back(t);
      } else if constexpr (requires { type::onnx_op; }) {
        if (!type::onnx_op.empty()) types.emplace_back(type::onnx_op);
      }
    };
    (take(entry), ...);
  }, registered_ops{});
  std::apply([&](auto... flow) {
    auto take = [&](auto f) {
      if constexpr (requires { decltype(f)::onnx_reads; })
        if (decltype(f)::name == op)
          for (std::string_view t : decltype(f)::onnx_reads) types.emplace_back(t);
    };
    (take(flow), ...);
  }, control_flow::registered{});
  return types;
}

// "ONNX: exported as `Transpose`, `Conv`, `Transpose`; read back from `Conv`." and the like.
inline std::string onnx_mapping(std::string_view op, const op_schema* schema) {
  std::string exported;
  const onnx_form form = find_onnx_form(op);
  const onnx_flow_form flow_form = form ? nullptr : find_onnx_flow_form(op);
  if ((form || flow_form) && schema) {
    recording_onnx_writer w(*schema, std::max<std::size_t>(schema->min_inputs, 1));
    try {
      if (form) form(w);
      else flow_form(w);
      const bool composition = w.types.size() > 1 && schema->attributes.empty();
      if (composition) {  // io/onnx_writer.hpp writes it as a model-local function, read back as the op
        exported = "exported as a call of the function `" + std::string(onnx_function_domain) + "." + std::string(op) +
                   "`, whose body is " + code_list(w.types) + " (read back as " + std::string(op) + " itself)";
      } else {
        exported = "exported as " + code_list(w.types);
        if (w.types.size() > 1 || flow_form) exported += " (for a typical node: the attributes can change them)";
      }
    } catch (const std::exception&) {
      exported = "exported as ONNX nodes chosen by the attributes and dtypes";
    }
  } else {
    exported = "no ONNX form (exporting a graph that uses it is an error naming the node)";
  }
  const std::vector<std::string> read = onnx_types_reading_to(op);
  std::string out = "ONNX: " + exported;
  if (!read.empty()) out += "; read back from " + code_list(read);
  return out + ". Conformance: [onnx.md](onnx.md#ops).";
}

}  // namespace symflow::cli
