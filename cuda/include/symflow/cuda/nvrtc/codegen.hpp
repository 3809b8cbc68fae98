#pragma once
// CUDA C++ source for one fusion group of a graph value (graph/runtime/plan.hpp). The generated
// kernel calls each member's op through its C++ type — `symflow::ops::mul_op::apply(a, b)` — and
// includes the op's own file (include/symflow/ops/<op>.hpp) in scalar-only mode (see prelude.hpp):
// the generator knows no op's math and has no table of CUDA spellings. The op's C++ type comes from
// the op registry (graph/op_registry.hpp: the op's type, or for ops whose attributes pick the
// instantiation, such as cast's `to`, the type `with_runtime_instance` picks), spelled by the host
// compiler's demangler.
//
// Kernel shape: a grid-stride loop over the group's frame (its extents, with extent-1 axes dropped
// and adjacent axes merged wherever every operand allows, as in the CPU interpreter). Operands read
// at the element's own index are loaded as `x[i]`, scalars as `x[0]`, broadcast operands through
// their strides in frame coordinates (kernel arguments, so one kernel serves any extents of the
// same structure). Literal nodes are compile-time constants in the source (bit-exact). Stored
// members (outputs, or read outside the group) are written at `y[i]`.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <typeinfo>
#include <vector>

#if __has_include(<cxxabi.h>)
#include <cxxabi.h>
#endif

#include <symflow/graph/graph.hpp>
#include <symflow/graph/op_registry.hpp>
#include <symflow/graph/runtime/op_table.hpp>
#include <symflow/graph/runtime/plan.hpp>

#include "compiler.hpp"
#include "prelude.hpp"

namespace symflow::cuda {

namespace nvrtc_detail {

// The C++ spelling of a type, as the host compiler's ABI names it ("symflow::ops::cast_op<long>").
template <class T>
std::string type_spelling() {
#if __has_include(<cxxabi.h>)
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> s(abi::__cxa_demangle(typeid(T).name(), nullptr, nullptr, &status), std::free);
  if (status == 0 && s) return s.get();
#endif
  throw nvrtc_error(std::string("graph_runner: cannot spell the C++ type ") + typeid(T).name());
}

// The C++ type of the elementwise op a node names, with its attributes applied (from the registry).
inline std::string elementwise_op_type(const graph_node& n) {
  std::string out;
  const node_attributes attrs(n);
  std::apply(
      [&](auto... entry) {
        (
            [&] {
              using E = decltype(entry);
              using Op = typename E::type;
              if constexpr (E::kind == node_kind::elementwise) {
                if (!out.empty() || Op::name != n.op) return;
                if constexpr (requires { Op::with_runtime_instance(attrs, [](auto) { return 0; }); })
                  out = Op::with_runtime_instance(attrs, [](auto op) { return type_spelling<decltype(op)>(); });
                else
                  out = type_spelling<Op>();
              }
            }(),
            ...);
      },
      registered_ops{});
  if (out.empty()) throw nvrtc_error("graph_runner: '" + n.op + "' is not an elementwise op of the registry");
  return out;
}

// C++ element types as NVRTC (LP64, like the host) spells them.
inline const char* element_type(dtype d) {
  switch (d) {
    case dtype::f32: return "float";
    case dtype::f64: return "double";
    case dtype::i32: return "int";
    case dtype::i64: return "long long";
    case dtype::boolean: return "bool";
  }
  return "?";
}

// A literal node's value in its dtype, bit-exact, as a C++ expression (the same conversions as the
// interpreter: T(bool), T(int64) or T(double)).
inline std::string literal_text(const graph_node& n, dtype d) {
  const attribute_value* a = n.attribute("value");
  std::string text;
  visit_dtype(d, [&](auto t) {
    using T = decltype(t);
    T x{};
    if (a && std::holds_alternative<bool>(*a)) x = T(std::get<bool>(*a));
    else if (a && std::holds_alternative<std::int64_t>(*a)) x = T(std::get<std::int64_t>(*a));
    else if (a && std::holds_alternative<double>(*a)) x = T(std::get<double>(*a));
    char buf[64];
    if constexpr (std::is_same_v<T, float>) {
      std::uint32_t bits;
      std::memcpy(&bits, &x, 4);
      std::snprintf(buf, sizeof buf, "__int_as_float(0x%08x)", unsigned(bits));
    } else if constexpr (std::is_same_v<T, double>) {
      std::uint64_t bits;
      std::memcpy(&bits, &x, 8);
      std::snprintf(buf, sizeof buf, "__longlong_as_double(0x%016llxll)", static_cast<unsigned long long>(bits));
    } else if constexpr (std::is_same_v<T, bool>) {
      std::snprintf(buf, sizeof buf, "%s", x ? "true" : "false");
    } else if constexpr (std::is_same_v<T, std::int32_t>) {
      std::snprintf(buf, sizeof buf, "int(%d)", int(x));
    } else {
      std::snprintf(buf, sizeof buf, "(%lldll)", static_cast<long long>(x));
    }
    text = buf;
  });
  return text;
}

// Where symflow's headers are: $SYMFLOW_INCLUDE_DIR, else next to this header (an installed tree
// holds include/symflow/{ops,cuda}; the source tree holds include/ and cuda/include/).
inline std::filesystem::path default_include_dir() {
  if (const char* env = std::getenv("SYMFLOW_INCLUDE_DIR"); env && *env) return env;
  const std::filesystem::path here = std::filesystem::absolute(__FILE__);
  // here = <dir>/symflow/cuda/nvrtc/codegen.hpp
  const auto dir = here.parent_path().parent_path().parent_path().parent_path();
  for (const auto& candidate : {dir, dir.parent_path().parent_path() / "include"})
    if (std::filesystem::exists(candidate / "symflow" / "core" / "config.hpp")) return candidate;
  return dir;
}

}  // namespace nvrtc_detail

// How an operand of a group's kernel is read.
enum class operand_access : std::uint8_t { literal, scalar, dense, strided };

// One generated kernel: a fusion group's source, its program for NVRTC, and what it reads/writes.
struct generated_kernel {
  static constexpr const char* entry = "symflow_group";
  std::string description;                // "mul 'mul', add 'add' over f32[1000]"
  nvrtc_program program;                  // source, headers, options
  std::vector<std::uint32_t> members;     // value ids, ascending
  std::vector<std::uint32_t> externals;   // value ids read from memory or embedded (literals)
  std::vector<operand_access> access;     // per external
  std::vector<std::uint32_t> stored;      // members written to memory, in kernel-argument order
  runtime_extents frame;                  // merged frame (at least one axis)
  std::vector<std::vector<std::size_t>> strides;  // per external, in frame coordinates
  std::size_t elements = 0;               // elements of the group's extents
};

// Generates the kernel for group `gi` of `plan` (types from infer_node_types). `stored_flags[id]`:
// whether a member is written to memory. `include_dir` holds symflow/ops/*.hpp.
inline generated_kernel generate_group_kernel(const symflow::graph& g, const value_types& t, const fusion_plan& plan, int gi,
                                              const std::vector<bool>& stored_flags,
                                              const std::filesystem::path& include_dir, const std::string& arch) {
  using namespace nvrtc_detail;
  const std::size_t first = g.inputs.size() + g.parameters.size() + g.constants.size();
  const auto node = [&](std::uint32_t id) -> const graph_node& { return g.nodes[id - first]; };
  const auto is_literal = [&](std::uint32_t id) { return id >= first && node(id).op == "literal"; };
  const fusion_group& gr = plan.groups[std::size_t(gi)];
  generated_kernel k;
  k.members = gr.members;
  k.elements = element_count(gr.extents);
  for (auto m : gr.members) {
    for (auto i : node(m).inputs)
      if (plan.group_of[i] != gi && std::find(k.externals.begin(), k.externals.end(), i) == k.externals.end())
        k.externals.push_back(i);
    if (stored_flags[m]) k.stored.push_back(m);
  }

  // Strides of each external in the group's index space (0 along broadcast axes), then axes merged
  // where every external allows it (the interpreter's rule).
  const runtime_extents& E = gr.extents;
  const std::size_t rank = E.size();
  const std::size_t nx = k.externals.size();
  std::vector<std::vector<std::size_t>> strides(nx, std::vector<std::size_t>(rank, 0));
  for (std::size_t x = 0; x < nx; ++x) {
    const auto& e = t.extents[k.externals[x]];
    std::size_t s = 1;
    for (std::size_t i = e.size(); i-- > 0;) {
      if (e[i] != 1) strides[x][rank - e.size() + i] = s;
      s *= e[i];
    }
  }
  runtime_extents dims;
  std::vector<std::vector<std::size_t>> ds(nx);
  for (std::size_t i = 0; i < rank; ++i) {
    if (E[i] == 1) continue;
    bool merge = !dims.empty();
    for (std::size_t x = 0; merge && x < nx; ++x) merge = ds[x].back() == strides[x][i] * E[i];
    if (merge) {
      dims.back() *= E[i];
      for (std::size_t x = 0; x < nx; ++x) ds[x].back() = strides[x][i];
    } else {
      dims.push_back(E[i]);
      for (std::size_t x = 0; x < nx; ++x) ds[x].push_back(strides[x][i]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    for (auto& d : ds) d.push_back(0);
  }
  k.frame = dims;
  k.strides = ds;
  const auto dense = runtime_layout::contiguous(dims).strides;
  for (std::size_t x = 0; x < nx; ++x) {
    const bool all_zero = std::all_of(ds[x].begin(), ds[x].end(), [](std::size_t s) { return s == 0; });
    if (is_literal(k.externals[x])) k.access.push_back(operand_access::literal);
    else if (all_zero) k.access.push_back(operand_access::scalar);
    else if (ds[x] == dense) k.access.push_back(operand_access::dense);
    else k.access.push_back(operand_access::strided);
  }

  // Headers: the prelude, config.hpp and each op's own file.
  std::vector<std::string> op_files;
  for (auto m : gr.members) {
    const std::string f = "symflow/ops/" + node(m).op + ".hpp";
    if (std::find(op_files.begin(), op_files.end(), f) == op_files.end()) op_files.push_back(f);
  }
  k.program.headers.emplace_back(prelude_name, prelude_text);
  for (const std::string& f : [&] {
         std::vector<std::string> all{"symflow/core/config.hpp"};
         all.insert(all.end(), op_files.begin(), op_files.end());
         return all;
       }()) {
    const auto path = include_dir / f;
    std::string text = read_file(path);
    if (text.empty())
      throw nvrtc_error("graph_runner: cannot read " + path.string() +
                        " (symflow's headers: set nvrtc_options::include_dir or SYMFLOW_INCLUDE_DIR)");
    k.program.headers.emplace_back(f, std::move(text));
  }
  k.program.arch = arch;

  // Description.
  std::string ops;
  for (auto m : gr.members) ops += (ops.empty() ? "" : ", ") + node(m).op + " '" + node(m).name + "'";
  k.description = ops + " over " + std::string(dtype_name(t.type[gr.members.back()])) + format_extents(E);

  // Source.
  const std::size_t R = dims.size();
  std::string s;
  s += "// symflow: fused group of a graph value (generated; see symflow/cuda/nvrtc/codegen.hpp)\n";
  s += "// " + ops + "\n";  // no extents: one program serves every extent of this structure
  s += std::string("#include \"") + prelude_name + "\"\n";
  for (const auto& f : op_files) s += "#include \"" + f + "\"\n";
  s += "\nstruct symflow_frame {\n  long long dim[" + std::to_string(R) + "];\n  long long stride[" +
       std::to_string(std::max<std::size_t>(nx, 1)) + "][" + std::to_string(R) + "];\n};\n\n";
  s += "extern \"C\" __global__ void " + std::string(generated_kernel::entry) + "(const symflow_frame f, const long long n";
  for (std::size_t x = 0; x < nx; ++x)
    if (k.access[x] != operand_access::literal)
      s += ",\n    const " + std::string(element_type(t.type[k.externals[x]])) + "* __restrict__ x" + std::to_string(x);
  for (std::size_t o = 0; o < k.stored.size(); ++o)
    s += ",\n    " + std::string(element_type(t.type[k.stored[o]])) + "* __restrict__ y" + std::to_string(o);
  s += ") {\n";
  s += "  const long long step = (long long)gridDim.x * blockDim.x;\n";
  s += "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {\n";
  const bool coordinates = std::find(k.access.begin(), k.access.end(), operand_access::strided) != k.access.end();
  if (coordinates) {
    for (std::size_t x = 0; x < nx; ++x)
      if (k.access[x] == operand_access::strided) s += "    long long o" + std::to_string(x) + " = 0;\n";
    s += "    long long r = i;\n";
    for (std::size_t d = R; d-- > 0;) {
      const std::string D = std::to_string(d);
      s += d ? "    {\n      const long long c = r % f.dim[" + D + "];\n      r /= f.dim[" + D + "];\n"
             : "    {\n      const long long c = r;\n";
      for (std::size_t x = 0; x < nx; ++x)
        if (k.access[x] == operand_access::strided)
          s += "      o" + std::to_string(x) + " += c * f.stride[" + std::to_string(x) + "][" + D + "];\n";
      s += "    }\n";
    }
  }
  const auto value_name = [&](std::uint32_t id) {
    // (Appended rather than `"v" + std::to_string(id)`, which trips GCC 12's -Wrestrict.)
    std::string name(1, plan.group_of[id] == gi ? 'v' : 'a');
    name += std::to_string(plan.group_of[id] == gi
                               ? std::size_t(id)
                               : std::size_t(std::find(k.externals.begin(), k.externals.end(), id) - k.externals.begin()));
    return name;
  };
  for (std::size_t x = 0; x < nx; ++x) {
    const std::uint32_t id = k.externals[x];
    const std::string X = std::to_string(x);
    std::string read;
    switch (k.access[x]) {
      case operand_access::literal: read = literal_text(node(id), t.type[id]); break;
      case operand_access::scalar: read = "x" + X + "[0]"; break;
      case operand_access::dense: read = "x" + X + "[i]"; break;
      case operand_access::strided: read = "x" + X + "[o" + X + "]"; break;
    }
    s += "    const " + std::string(element_type(t.type[id])) + " a" + X + " = " + read + ";\n";
  }
  for (auto m : gr.members) {
    const graph_node& n = node(m);
    const char* R_t = element_type(t.type[m]);
    s += "    const " + std::string(R_t) + " v" + std::to_string(m) + " = static_cast<" + R_t + ">(" +
         elementwise_op_type(n) + "::apply(";
    for (std::size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + value_name(n.inputs[i]);
    s += "));  // " + n.op + " '" + n.name + "'\n";
  }
  for (std::size_t o = 0; o < k.stored.size(); ++o)
    s += "    y" + std::to_string(o) + "[i] = v" + std::to_string(k.stored[o]) + ";\n";
  s += "  }\n}\n";
  k.program.source = std::move(s);
  k.program.name = "symflow_group.cu";
  return k;
}

}  // namespace symflow::cuda
