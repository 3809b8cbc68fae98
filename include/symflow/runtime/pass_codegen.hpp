#pragma once
// C++ source for one fused pass of the interpreter (a fusion group whose members and operands share
// one floating-point dtype): a function that computes a tile of n elements with every member's
// value kept in registers, instead of one SIMD loop per op over tile buffers in L1. It calls each
// op through its C++ type and includes the op's own file (include/symflow/ops/<op>.hpp), so the
// generator knows no op's math. Each member is computed exactly as the interpreter's tile kernel
// computes it (runtime/op_table.hpp): the op's packet function over the whole packets of the
// tile when the kernel uses it, else its scalar function, and the scalar function over the tail —
// so a generated pass gives the interpreter's results bit for bit (compiled with the same target
// flags: see pass_compiler.hpp).
//
// The source holds no text from the graph: node names, scopes and source locations are data of the
// graph value and never reach a compiler (a name holding a newline would otherwise become code).
// Operands are numbered; the only words taken from outside this file are the op's registered name
// and its C++ type, and both are checked to be identifiers before use.
#include <cstddef>
#include <string>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"

namespace symflow {

// Where a member reads an operand: one of the pass's externals (a tile of n values, or a splatted
// scalar, at in[index]) or an earlier member (by position).
struct pass_operand {
  bool member = false;
  std::size_t index = 0;
};

struct pass_member {
  std::string op;       // the op's name: its file is symflow/ops/<op>.hpp
  std::string op_type;  // its C++ type, attributes applied ("symflow::ops::mul_op")
  bool packet = false;  // the interpreter's kernel uses the packet function
  std::vector<pass_operand> operands;
};

namespace pass_codegen_detail {
// An op's registered name: lower-case letters, digits and '_' (it names the file symflow/ops/<op>.hpp).
inline bool is_op_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}
// A C++ type as the ABI spells it: identifiers, '::', template brackets, ',', ' ' and integer
// literals ("symflow::ops::cast_op<long>", "symflow::ops::pow_op<2l>").
inline bool is_type_spelling(const std::string& s) {
  if (s.empty() || s.size() > 512) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':' ||
          c == '<' || c == '>' || c == ',' || c == ' ' || c == '-'))
      return false;
  return true;
}
}  // namespace pass_codegen_detail

// The pass's entry point: in[k] = external k's tile, out[j] = where stored member j's tile goes.
inline constexpr const char* pass_entry_name = "symflow_pass";
using pass_function = void (*)(const void* const* in, void* const* out, std::size_t n);

// The source of the pass over `externals` inputs computing `members` (in order) and writing the
// members listed in `stored` (positions), all of dtype `type` (f32 or f64). Stored member j is written
// with streaming stores where `streamed[j]` (outputs too large to stay cached; the caller fences).
inline std::string generate_pass_source(dtype type, std::size_t externals, const std::vector<pass_member>& members,
                                        const std::vector<std::size_t>& stored, const std::vector<bool>& streamed = {}) {
  const std::string T(dtype_info_of(type).cpp);
  for (const auto& m : members)
    if (!pass_codegen_detail::is_op_name(m.op) || !pass_codegen_detail::is_type_spelling(m.op_type))
      throw error("generated pass: refusing an op name or C++ type that is not an identifier (op of " +
                  std::to_string(m.op.size()) + " bytes)");
  std::vector<std::string> files;
  for (const auto& m : members) {
    const std::string f = "symflow/ops/" + m.op + ".hpp";
    bool seen = false;
    for (const auto& g : files) seen = seen || g == f;
    if (!seen) files.push_back(f);
  }
  const auto value = [](const pass_operand& o) { return (o.member ? "v" : "a") + std::to_string(o.index); };
  const auto call_args = [&](const pass_member& m) {
    std::string s;
    for (std::size_t i = 0; i < m.operands.size(); ++i) s += (i ? ", " : "") + value(m.operands[i]);
    return s;
  };

  std::string s = "// symflow: a fused pass of a graph value (generated; see symflow/runtime/pass_codegen.hpp)\n";
  for (std::size_t k = 0; k < members.size(); ++k) s += "// v" + std::to_string(k) + ": " + members[k].op + "\n";
  s += "#include <symflow/runtime/pass_support.hpp>\n";
  for (const auto& f : files) s += "#include <" + f + ">\n";
  s += "\nextern \"C\" void " + std::string(pass_entry_name) +
       "(const void* const* in, void* const* out, std::size_t n) {\n";
  s += "  using T = " + T + ";\n  using P = symflow::simd::packet_t<T>;\n";
  s += "  namespace pm = symflow::simd::pm;\n";
  s += "  constexpr std::size_t width = symflow::simd::packet_size<T>;\n";
  for (std::size_t x = 0; x < externals; ++x)
    s += "  const T* const x" + std::to_string(x) + " = static_cast<const T*>(in[" + std::to_string(x) + "]);\n";
  for (std::size_t j = 0; j < stored.size(); ++j)
    s += "  T* const y" + std::to_string(j) + " = static_cast<T*>(out[" + std::to_string(j) + "]);\n";

  s += "  std::size_t i = 0;\n  for (; i + width <= n; i += width) {\n";
  for (std::size_t x = 0; x < externals; ++x)
    s += "    const P a" + std::to_string(x) + " = pm::ploadu<P>(x" + std::to_string(x) + " + i);\n";
  for (std::size_t k = 0; k < members.size(); ++k) {
    const auto& m = members[k];
    s += "    const P v" + std::to_string(k) + " = ";
    s += m.packet ? m.op_type + "::packet(" + call_args(m) + ")"
                  : "symflow::pass_support::lanewise<" + m.op_type + ", T>(" + call_args(m) + ")";
    s += ";\n";
  }
  for (std::size_t j = 0; j < stored.size(); ++j)
    s += (j < streamed.size() && streamed[j] ? "    symflow::pass_support::store_streaming(y" : "    pm::pstoreu(y") +
         std::to_string(j) + " + i, v" + std::to_string(stored[j]) + ");\n";
  s += "  }\n  for (; i < n; ++i) {\n";
  for (std::size_t x = 0; x < externals; ++x)
    s += "    const T a" + std::to_string(x) + " = x" + std::to_string(x) + "[i];\n";
  for (std::size_t k = 0; k < members.size(); ++k)
    s += "    const T v" + std::to_string(k) + " = static_cast<T>(" + members[k].op_type + "::apply(" +
         call_args(members[k]) + "));\n";
  for (std::size_t j = 0; j < stored.size(); ++j)
    s += "    y" + std::to_string(j) + "[i] = v" + std::to_string(stored[j]) + ";\n";
  s += "  }\n}\n";
  return s;
}

}  // namespace symflow
