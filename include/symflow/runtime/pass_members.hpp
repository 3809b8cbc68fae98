#pragma once
// What a fused pass (fused_pass.hpp) is built from — the values it reads and its members — and
// the generated pass for them (pass_codegen.hpp, compiled at run time by pass_compiler.hpp) when
// SYMFLOW_NATIVE_PASSES=1 or interpreter_options::native_passes asks for one.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../ir/value.hpp"
#include "op_table.hpp"
#include "pass_compiler.hpp"
#include "run_options.hpp"

namespace symflow {

namespace fused_pass_detail {

inline bool native_passes_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SYMFLOW_NATIVE_PASSES");
    return v && std::string(v) == "1";
  }();
  return on;
}

inline void warn_native_pass_unavailable(const std::string& why) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true))
    std::fprintf(stderr, "symflow: the interpreter runs its fused passes op by op: %s\n", why.c_str());
}

}  // namespace fused_pass_detail

// A value the pass reads from memory (its extents broadcast to the pass's).
struct fused_pass_input {
  const void* data = nullptr;
  dtype type = dtype::f32;
  runtime_extents extents;
};

// A member: an elementwise node of the group, in evaluation order.
struct fused_pass_member {
  elementwise_kernel kernel;
  std::string op;                     // the op's name (a generated pass includes symflow/ops/<op>.hpp)
  std::vector<std::size_t> operands;  // pointer-table indices: inputs first, then members
  dtype type = dtype::f32;
  void* storage = nullptr;            // stored: the value's elements; else it lives in a tile buffer
};

// The generated pass, when switched on and the group qualifies: two or more members, every member
// and input of one floating-point dtype. `streamed[k]`: member k, stored, is written with streaming
// stores.
inline pass_function generated_pass_for(const interpreter_options& options, const std::vector<fused_pass_input>& inputs,
                                        const std::vector<fused_pass_member>& members, const std::vector<char>& streamed) {
  if (!options.native_passes.value_or(fused_pass_detail::native_passes_enabled()) || members.size() < 2) return nullptr;
  const dtype type = members.front().type;
  if (type != dtype::f32 && type != dtype::f64) return nullptr;
  for (const auto& m : members)
    if (m.type != type) return nullptr;
  for (const auto& x : inputs)
    if (x.type != type) return nullptr;
  const std::size_t nx = inputs.size();
  std::vector<pass_member> generated;
  std::vector<std::size_t> stored;
  std::vector<bool> stored_streamed;
  for (std::size_t k = 0; k < members.size(); ++k) {
    const fused_pass_member& m = members[k];
    pass_member g{m.op, m.kernel.op_type(), m.kernel.packet, {}};
    for (auto at : m.operands) g.operands.push_back(at < nx ? pass_operand{false, at} : pass_operand{true, at - nx});
    generated.push_back(std::move(g));
    if (m.storage) {
      stored.push_back(k);
      stored_streamed.push_back(streamed[k] != 0);
    }
  }
  pass_library& library = pass_library::global();
  const pass_function f = library.get(generate_pass_source(type, nx, generated, stored, stored_streamed), options.compiler);
  if (!f) fused_pass_detail::warn_native_pass_unavailable(library.last_error());
  return f;
}

}  // namespace symflow
