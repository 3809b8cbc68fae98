#pragma once
// CUDA C++ source for one fusion group of a graph value (runtime/plan.hpp). The generated
// kernel calls each member's op through its C++ type — `symflow::ops::mul_op::apply(a, b)` — and
// includes the op's own file (include/symflow/ops/<op>.hpp) in scalar-only mode (see prelude.hpp):
// the generator knows no op's math and has no table of CUDA spellings. The op's C++ type comes from
// the op registry (ir/op_registry.hpp: the op's type, or for ops whose attributes pick the
// instantiation, such as cast's `to`, the type `with_runtime_instance` picks), spelled by the host
// compiler's demangler.
//
// Kernel shape: a grid-stride loop over the group's frame (its extents, with extent-1 axes dropped
// and adjacent axes merged wherever every operand allows, as in the CPU interpreter). Operands read
// at the element's own index are loaded as `x[i]`, scalars as `x[0]`, broadcast operands through
// their strides in frame coordinates (kernel arguments, so one kernel serves any extents of the
// same structure). Literal nodes are compile-time constants in the source (bit-exact). Stored
// members (outputs, or read outside the group) are written at `y[i]`. A view node among the operands
// is read through its layout in its operand's memory (strides in the frame, an offset on the
// pointer). A reduction over trailing axes can be computed in the same pass (generate_kernel).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <symflow/ir/graph.hpp>
#include <symflow/ir/op_registry.hpp>
#include <symflow/runtime/op_table.hpp>
#include <symflow/runtime/plan.hpp>
#include <symflow/runtime/type_spelling.hpp>

#include "compiler.hpp"
#include "op_headers.hpp"
#include "prelude.hpp"

namespace symflow::cuda {

namespace nvrtc_detail {

// The C++ type of the op of kind `Kind` a node names, with its attributes applied (from the registry).
template <node_kind Kind>
std::string registered_op_type(const graph_node& n) {
  std::string out;
  const node_attributes attrs(n);
  std::apply(
      [&](auto... entry) {
        (
            [&] {
              using E = decltype(entry);
              using Op = typename E::type;
              if constexpr (E::kind == Kind) {
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
  if (out.empty())
    throw nvrtc_error("graph_runner: '" + n.op + "' is not " +
                      (Kind == node_kind::reduction ? "a reduction" : "an elementwise op") + " of the registry");
  return out;
}
inline std::string elementwise_op_type(const graph_node& n) { return registered_op_type<node_kind::elementwise>(n); }
inline std::string reduction_op_type(const graph_node& n) { return registered_op_type<node_kind::reduction>(n); }

// C++ element types as NVRTC (LP64, like the host) spells them: the dtype's row's `cuda` column
// (core/dtype.hpp; each spelling is a literal, so .data() ends in '\0').
inline const char* element_type(dtype d) {
  const dtype_info* row = find_dtype_info(d);
  return row ? row->cuda.data() : "?";
}

// A literal node's value in its dtype, bit-exact, as a C++ expression (the same conversions as the
// interpreter: T(bool), T(int64) or T(double)).
inline std::string literal_text(const graph_node& n, dtype d) {
  const attribute_value* a = n.attribute("value");
  std::string text;
  visit_compute_dtype(d, [&](auto t) {
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

// A reduction a generated kernel computes: the operand's extents seen as [rows, count] (the reduced
// axes, extent-1 axes aside, all after the kept ones), one result per row.
struct reduction_part {
  std::uint32_t node = 0;     // the reduction node (value id; its result is written at r[row])
  std::uint32_t operand = 0;  // the value reduced: a member of the kernel's group, or read from memory
  std::size_t rows = 0;       // results
  std::size_t count = 0;      // elements combined per result
};

// The rows/count view of a reduction of `extents` over the axes in `reduced`, when the reduced axes
// (extent-1 axes aside) all follow the kept ones; nullopt otherwise (other axis sets).
inline std::optional<reduction_part> trailing_reduction(const runtime_extents& extents, const std::vector<bool>& reduced) {
  reduction_part r;
  r.rows = r.count = 1;
  bool inner = false;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    if (extents[i] == 1) continue;
    if (reduced[i]) {
      inner = true;
      r.count *= extents[i];
    } else {
      if (inner) return std::nullopt;
      r.rows *= extents[i];
    }
  }
  return r;
}

// A view node read through strides instead of copied: the value whose memory holds its elements and
// the view's layout in that memory (the view op's runtime_view of the source's contiguous layout).
struct view_read {
  std::uint32_t source = 0;
  runtime_layout layout;
};
using view_reads = std::map<std::uint32_t, view_read>;

// One generated kernel: a fusion group's source, its program for NVRTC, and what it reads/writes.
struct generated_kernel {
  static constexpr const char* entry = "symflow_group";
  std::string description;                // "mul 'mul', add 'add' over f32[1000]"
  nvrtc_program program;                  // source, headers, options
  std::vector<std::uint32_t> members;     // value ids, ascending
  std::vector<std::uint32_t> externals;   // value ids read from memory or embedded (literals)
  std::vector<operand_access> access;     // per external
  std::vector<std::uint32_t> sources;     // per external: the value whose memory is read (a view's source)
  std::vector<std::size_t> offsets;       // per external: elements from that memory's start (views)
  std::vector<std::uint32_t> stored;      // members written to memory, in kernel-argument order
  runtime_extents frame;                  // merged frame (at least one axis)
  std::vector<std::vector<std::size_t>> strides;  // per external, in frame coordinates
  std::size_t elements = 0;               // elements of the group's extents
  std::optional<reduction_part> reduction;  // a reduction computed in the same pass
  // The view a strided-copy kernel materialises (generate_kernel's `copy`), if that is what it is.
  std::optional<std::uint32_t> copy_of() const {
    if (members.empty() && !reduction && externals.size() == 1 && stored.size() == 1 && stored[0] == externals[0])
      return externals[0];
    return std::nullopt;
  }
  unsigned block = 0;                     // reductions: most threads per block (a power of two; the
                                          // runner launches the smallest power of two >= count, up to this)
};

// Generates the kernel for group `gi` of `plan` (types from infer_node_types). `stored_flags[id]`:
// whether a member is written to memory. `include_dir` holds symflow/ops/*.hpp.
//
// With `reduction`: the kernel also computes that reduction of a member of the group (or, with
// gi < 0, of a value read from memory) in the same pass — the reduced operand is never stored unless
// `stored_flags` says so. One block per result row, of B threads (B a power of two, at most `block`,
// chosen at launch): thread t combines the row's elements t, t + B, ... in that order, then the
// block's partial results are combined in a fixed tree (no atomics: the same bits on every run).
// The accumulator is double for floating operands (as the CPU interpreter's), the operand's type for
// integers; identity, combine and finish are the op's own functions.
//
// Externals in `views` are view nodes read through their layout in their source's memory (strides in
// the kernel's frame, the offset added to the pointer by the caller). With gi < 0, no reduction and
// `copy`: the kernel copies that (view) value, read so, into dense memory.
inline generated_kernel generate_kernel(const symflow::graph& g, const value_types& t, const fusion_plan& plan, int gi,
                                        const std::vector<bool>& stored_flags, const std::filesystem::path& include_dir,
                                        const std::string& arch, const std::optional<reduction_part>& reduction = {},
                                        unsigned block = 256, const view_reads& views = {},
                                        std::optional<std::uint32_t> copy = {}) {
  using namespace nvrtc_detail;
  const std::size_t first = g.inputs.size() + g.parameters.size() + g.constants.size();
  const auto node = [&](std::uint32_t id) -> const graph_node& { return g.nodes[id - first]; };
  const auto is_literal = [&](std::uint32_t id) { return id >= first && node(id).is_literal(); };
  const auto in_group = [&](std::uint32_t id) { return gi >= 0 && plan.group_of[id] == gi; };
  static const std::vector<std::uint32_t> no_members;
  const std::vector<std::uint32_t>& members = gi >= 0 ? plan.groups[std::size_t(gi)].members : no_members;
  generated_kernel k;
  k.members = members;
  k.reduction = reduction;
  for (auto m : members) {
    for (auto i : node(m).inputs)
      if (!in_group(i) && std::find(k.externals.begin(), k.externals.end(), i) == k.externals.end())
        k.externals.push_back(i);
    if (stored_flags[m]) k.stored.push_back(m);
  }
  if (reduction && !in_group(reduction->operand) &&
      std::find(k.externals.begin(), k.externals.end(), reduction->operand) == k.externals.end())
    k.externals.push_back(reduction->operand);
  if (copy) {
    k.externals.push_back(*copy);
    k.stored.push_back(*copy);
  }
  const runtime_extents E = gi >= 0 ? plan.groups[std::size_t(gi)].extents
                                    : t.extents[copy ? *copy : reduction.value().operand];
  k.elements = element_count(E);
  for (auto x : k.externals) {
    const auto v = views.find(x);
    k.sources.push_back(v == views.end() ? x : v->second.source);
    k.offsets.push_back(v == views.end() ? 0 : v->second.layout.offset);
  }

  // Strides of each external in the group's index space (0 along broadcast axes; a view's own
  // strides), then axes merged where every external allows it (the interpreter's rule).
  const std::size_t rank = E.size();
  const std::size_t nx = k.externals.size();
  std::vector<std::vector<std::size_t>> strides;
  for (std::size_t x = 0; x < nx; ++x) {
    const auto& e = t.extents[k.externals[x]];
    strides.push_back(broadcast_strides(rank, e));
    if (const auto v = views.find(k.externals[x]); v != views.end())
      for (std::size_t i = 0; i < e.size(); ++i)
        if (e[i] != 1) strides[x][rank - e.size() + i] = v->second.layout.strides[i];
  }
  merged_axes merged = merge_axes(E, strides);
  runtime_extents& dims = merged.dims;
  std::vector<std::vector<std::size_t>>& ds = merged.strides;
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

  // Headers: the prelude, config.hpp and each op's own file (op_headers.hpp).
  std::vector<std::string> op_files;  // (a view read through strides calls nothing)
  std::vector<std::uint32_t> ops_used = members;
  if (reduction) ops_used.push_back(reduction->node);
  for (auto m : ops_used) {
    const std::string_view file = op_file_of(node(m).op);
    if (file.empty()) throw nvrtc_error("graph_runner: op '" + node(m).op + "' is not in the op list (ops/list.hpp)");
    const std::string f = "symflow/ops/" + std::string(file);
    if (std::find(op_files.begin(), op_files.end(), f) == op_files.end()) op_files.push_back(f);
  }
  k.program.headers.emplace_back(prelude_name, prelude_text);
  for (auto& h : op_headers(include_dir, op_files)) k.program.headers.push_back(std::move(h));
  k.program.arch = arch;
  // A reduction calls its op's `identity`, which has no execution-space annotation (a constexpr
  // host function for host compilers): NVRTC compiles such functions for the device with this.
  if (reduction) k.program.options.push_back("-default-device");

  // Description.
  std::string ops;
  for (auto m : members) ops += (ops.empty() ? "" : ", ") + node(m).op + " '" + node(m).name + "'";
  if (reduction) {
    const graph_node& rn = node(reduction->node);
    const auto label = [&](std::uint32_t id) {
      const std::size_t ni = g.inputs.size(), np = g.parameters.size();
      return id >= first ? node(id).name : id < ni ? g.inputs[id].name : id < ni + np ? g.parameters[id - ni].name
                                                                                      : g.constants[id - ni - np].name;
    };
    k.description = rn.op + " '" + rn.name + "' of " + (ops.empty() ? "'" + label(reduction->operand) + "'" : "(" + ops + ")") +
                    " over " + std::string(dtype_name(t.type[reduction->operand])) + format_extents(E) + " as " +
                    std::to_string(reduction->rows) + " rows of " + std::to_string(reduction->count);
    ops += (ops.empty() ? "" : ", ") + rn.op + " '" + rn.name + "'";
  } else if (copy) {
    const graph_node& cn = node(*copy);
    k.description = cn.op + " '" + cn.name + "' copied to dense memory, " + std::string(dtype_name(t.type[*copy])) + format_extents(E);
    ops = cn.op + " '" + cn.name + "' (strided copy)";
  } else {
    k.description = ops + " over " + std::string(dtype_name(t.type[members.back()])) + format_extents(E);
  }

  // Source.
  const std::size_t R = dims.size();
  std::string s;
  s += "// symflow: fused group of a graph value (generated; see symflow/cuda/nvrtc/codegen.hpp)\n";
  // The source holds no text from the graph (node names and scopes are data, and a name holding a
  // newline would become code): members are numbered, and only the ops' registered names appear.
  std::string op_names;
  for (auto m : members) op_names += (op_names.empty() ? "" : ", ") + node(m).op;
  if (reduction) op_names += (op_names.empty() ? "" : ", ") + node(reduction->node).op;
  s += "// " + op_names + "\n";  // no extents: one program serves every extent of this structure
  s += std::string("#include \"") + prelude_name + "\"\n";
  for (const auto& f : op_files) s += "#include \"" + f + "\"\n";
  s += "\nstruct symflow_frame {\n  long long dim[" + std::to_string(R) + "];\n  long long stride[" +
       std::to_string(std::max<std::size_t>(nx, 1)) + "][" + std::to_string(R) + "];\n};\n\n";
  s += "extern \"C\" __global__ void " + std::string(generated_kernel::entry) + "(const symflow_frame f, const long long n";
  if (reduction) s += ", const long long rows, const long long count";
  for (std::size_t x = 0; x < nx; ++x)
    if (k.access[x] != operand_access::literal)
      s += ",\n    const " + std::string(element_type(t.type[k.externals[x]])) + "* __restrict__ x" + std::to_string(x);
  for (std::size_t o = 0; o < k.stored.size(); ++o)
    s += ",\n    " + std::string(element_type(t.type[k.stored[o]])) + "* __restrict__ y" + std::to_string(o);
  std::string red_type, acc_type, red_op;
  if (reduction) {
    const dtype rt = t.type[reduction->node];
    red_type = element_type(rt);
    acc_type = rt == dtype::f32 || rt == dtype::f64 ? "double" : red_type;
    red_op = reduction_op_type(node(reduction->node));
    unsigned b = 1;
    while (b * 2 <= std::clamp(block, 1u, 1024u)) b *= 2;
    k.block = b;
    s += ",\n    " + red_type + "* __restrict__ r";
  }
  s += ") {\n";
  if (reduction) {
    const std::string B = std::to_string(k.block);
    s += "  __shared__ " + acc_type + " part[" + B + "];\n";
    s += "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n";
    s += "  " + acc_type + " acc = " + red_op + "::identity<" + acc_type + ">();\n";
    s += "  for (long long j = threadIdx.x; j < count; j += blockDim.x) {\n";
    s += "    const long long i = row * count + j;\n";
  } else {
    s += "  const long long step = (long long)gridDim.x * blockDim.x;\n";
    s += "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {\n";
  }
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
    std::string name(1, in_group(id) ? 'v' : 'a');
    name += std::to_string(in_group(id)
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
  for (auto m : members) {
    const graph_node& n = node(m);
    const char* R_t = element_type(t.type[m]);
    s += "    const " + std::string(R_t) + " v" + std::to_string(m) + " = static_cast<" + R_t + ">(" +
         elementwise_op_type(n) + "::apply(";
    for (std::size_t i = 0; i < n.inputs.size(); ++i) s += (i ? ", " : "") + value_name(n.inputs[i]);
    s += "));  // " + n.op + "\n";
  }
  for (std::size_t o = 0; o < k.stored.size(); ++o)
    s += "    y" + std::to_string(o) + "[i] = " + value_name(k.stored[o]) + ";\n";
  if (reduction) {
    s += "    acc = " + red_op + "::combine(acc, static_cast<" + acc_type + ">(" + value_name(reduction->operand) + "));\n";
    s += "  }\n";
    // The block's partial results, combined in a fixed tree.
    s += "  part[threadIdx.x] = acc;\n";
    s += "  __syncthreads();\n";
    s += "  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {\n";
    s += "    if (threadIdx.x < s) part[threadIdx.x] = " + red_op + "::combine(part[threadIdx.x], part[threadIdx.x + s]);\n";
    s += "    __syncthreads();\n";
    s += "  }\n";
    s += "  if (threadIdx.x == 0) r[row] = static_cast<" + red_type + ">(" + red_op +
         "::finish(part[0], static_cast<decltype(sizeof(0))>(count)));\n";
    s += "  __syncthreads();  // part is reused by the block's next row\n";
    s += "  }\n}\n";
  } else {
    s += "  }\n}\n";
  }
  k.program.source = std::move(s);
  k.program.name = "symflow_group.cu";
  return k;
}

// The kernel of fusion group `gi` alone (no reduction).
inline generated_kernel generate_group_kernel(const symflow::graph& g, const value_types& t, const fusion_plan& plan, int gi,
                                              const std::vector<bool>& stored_flags,
                                              const std::filesystem::path& include_dir, const std::string& arch) {
  return generate_kernel(g, t, plan, gi, stored_flags, include_dir, arch);
}

}  // namespace symflow::cuda
