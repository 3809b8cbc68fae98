#pragma once
// What a loader accepts: every op a graph may name, with its node kind, operand count, attributes
// and operand dtypes. Each entry is read from the op's own file — its `name`, the keys and kinds its
// `visit_attributes` reports, its dtype rule (`accepts` and `result_type`) — through one
// representative instantiation of the op; the operand count comes from the op's scalar function
// (elementwise) or its shape rule (kernels). Nothing here restates an op's rules or names an op: the
// list of ops is ops/list.hpp.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../core/separate_compilation.hpp"
#include "../expr/node.hpp"
#include "../ops/all.hpp"
#include "control_flow/list.hpp"
#include "dtype_rule.hpp"

namespace symflow {

enum class attribute_kind : std::uint8_t { boolean, integer, number, dtype_name, integers, graph };

constexpr std::string_view attribute_kind_name(attribute_kind k) {
  switch (k) {
    case attribute_kind::boolean: return "a boolean";
    case attribute_kind::integer: return "an integer";
    case attribute_kind::number: return "a number";
    case attribute_kind::dtype_name: return "a dtype name";
    case attribute_kind::integers: return "a list of integers";
    case attribute_kind::graph: return "a graph";
  }
  return "?";
}

struct attribute_spec {
  std::string_view key;
  attribute_kind kind;
  // A graph file may omit it (files written before the attribute existed); the op's runtime form
  // then reads its default. Ops list such keys in `optional_attributes`.
  bool optional = false;
};

inline constexpr std::size_t unbounded_inputs = static_cast<std::size_t>(-1);

struct op_schema {
  std::string_view name;
  node_kind kind;
  std::size_t min_inputs, max_inputs;
  std::vector<attribute_spec> attributes;
  dtype_rule dtypes{};  // elementwise ops and kernels
  bool prints_attributes = false;  // printouts show its attributes (expr/to_string.hpp)
};

namespace detail {
// Records the keys and kinds an op's visit_attributes reports.
struct attribute_schema_recorder {
  std::vector<attribute_spec>* out;
  void operator()(std::string_view k, bool) const { out->push_back({k, attribute_kind::boolean}); }
  void operator()(std::string_view k, std::size_t) const { out->push_back({k, attribute_kind::integer}); }
  void operator()(std::string_view k, double) const { out->push_back({k, attribute_kind::number}); }
  void operator()(std::string_view k, dtype) const { out->push_back({k, attribute_kind::dtype_name}); }
  template <std::size_t N>
  void operator()(std::string_view k, const std::array<std::size_t, N>&) const {
    out->push_back({k, attribute_kind::integers});
  }
};

template <class Op>
std::vector<attribute_spec> attribute_schema_of() {
  std::vector<attribute_spec> out;
  if constexpr (requires(Op op) { op.visit_attributes(attribute_schema_recorder{&out}); })
    Op{}.visit_attributes(attribute_schema_recorder{&out});
  if constexpr (requires { Op::optional_attributes; })
    for (attribute_spec& spec : out)
      for (std::string_view key : Op::optional_attributes) spec.optional = spec.optional || spec.key == key;
  return out;
}

template <class Op, std::size_t N>
consteval bool elementwise_takes() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return requires { Op::apply(((void)I, 1.0f)...); };
  }(std::make_index_sequence<N>{});
}
// A struct rather than an alias template: nvcc's front end expands an alias that ignores its
// argument before the pack, and then finds no pack to expand.
template <std::size_t>
struct square_shape {
  using type = shape<2, 2>;
};
// Spelled out per count: clang 14 refuses a pack expanded into an alias template's non-pack
// parameters (CWG 1430), so `result_shape<S...>` would probe false for every fixed-arity kernel.
template <class Op, std::size_t N>
consteval bool kernel_takes() {
  using S = typename square_shape<N>::type;
  if constexpr (N == 1) return requires { typename Op::template result_shape<S>; };
  else if constexpr (N == 2) return requires { typename Op::template result_shape<S, S>; };
  else if constexpr (N == 3) return requires { typename Op::template result_shape<S, S, S>; };
  else return requires { typename Op::template result_shape<S, S, S, S>; };
}

// Operand counts: an elementwise op's from its scalar function, a kernel's from its shape rule,
// probed from two operands up (a variadic shape rule, concat's, needs at least two).
template <node_kind Kind, class Op>
consteval std::size_t rule_operands() {
  if constexpr (Kind == node_kind::elementwise)
    return elementwise_takes<Op, 1>() ? 1 : elementwise_takes<Op, 2>() ? 2 : 3;
  else if constexpr (Kind == node_kind::kernel)
    return kernel_takes<Op, 2>() ? 2 : kernel_takes<Op, 3>() ? 3 : 1;
  else
    return 0;
}
template <node_kind Kind, class Op>
inline constexpr bool variadic_kernel = Kind == node_kind::kernel && kernel_takes<Op, 2>() && kernel_takes<Op, 3>();

// The dtype rule of an elementwise op or a kernel, from its own `accepts` and `result_type`.
template <node_kind Kind, class Op>
dtype_rule dtype_rule_of() {
  if constexpr (Kind == node_kind::elementwise || Kind == node_kind::kernel) {
    constexpr std::size_t n = rule_operands<Kind, Op>();
    static_assert(declares_accepts<Op, n>(),
                  "symflow: a listed elementwise op or kernel declares the operand dtypes it accepts: "
                  "template <class... T> static constexpr bool accepts (its dtype rule, with result_type)");
    return dtype_rule{n, variadic_kernel<Kind, Op>, dtype_rule_table<Op, n>.data(), dtype_rule_rows<Op>};
  } else {
    return {};
  }
}

template <node_kind Kind, class Op>
op_schema schema_of() {
  op_schema s{Op::name, Kind, 1, 1, attribute_schema_of<Op>(), dtype_rule_of<Kind, Op>(),
              requires { Op::prints_attributes; }};
  if constexpr (Kind == node_kind::elementwise) {
    s.min_inputs = s.max_inputs = rule_operands<Kind, Op>();
  } else if constexpr (Kind == node_kind::kernel) {
    if constexpr (kernel_takes<Op, 2>()) {
      s.min_inputs = 2;
      s.max_inputs = variadic_kernel<Kind, Op> ? unbounded_inputs : 2;
    } else if constexpr (kernel_takes<Op, 3>()) {
      s.min_inputs = s.max_inputs = 3;
    }
  } else if constexpr (Kind == node_kind::reduction) {
    s.attributes = {{"axes", attribute_kind::integers}, {"keepdims", attribute_kind::boolean}};
  }
  return s;
}
}  // namespace detail

// Every op a graph value may contain: one entry per op, read through one representative
// instantiation (the interpreter's runtime forms take the attributes as values), in the order of
// the op list (ops/list.hpp), whose second reading writes the entries. The schemas below and the
// interpreter's table (runtime/op_table.hpp) both come from this list.
template <node_kind Kind, class Op>
struct op_entry {
  static constexpr node_kind kind = Kind;
  using type = Op;
};
namespace detail {
// The tuple of all the types in the tuples T...
template <class... T>
using concatenated = decltype(std::tuple_cat(std::declval<T>()...));

// The file name at the end of a path (__FILE__ spells the path as the compiler reached the file).
constexpr std::string_view file_name_of(std::string_view path) {
  const auto slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}
}  // namespace detail
namespace op_list {
using enum node_kind;
using namespace ops;
#define SYMFLOW_LISTED(kind, ...) std::tuple<op_entry<kind, __VA_ARGS__>>,
using registered_ops = detail::concatenated<
#include "../ops/list.hpp"
    std::tuple<>>;
#undef SYMFLOW_LISTED

struct op_file {
  std::string_view op, file;
};
// Each op's name and the file that defines it (a code generator includes the op's own file).
inline constexpr op_file op_files[] = {
#define SYMFLOW_LISTED(kind, ...) op_file{__VA_ARGS__::name, detail::file_name_of(__FILE__)},
#include "../ops/list.hpp"
#undef SYMFLOW_LISTED
};
}  // namespace op_list
using op_list::registered_ops;

namespace detail {
template <class Op>
op_schema control_flow_schema(Op) {
  op_schema s{Op::name, node_kind::kernel, Op::min_inputs, Op::max_inputs, {}};
  for (const auto& a : Op::attributes)
    s.attributes.push_back({a.key, a.kind == control_flow::flow_attribute::graph ? attribute_kind::graph : attribute_kind::integer});
  return s;
}
}  // namespace detail

// Every op a graph value may contain, sorted by name. Reading every op's schema instantiates
// each op's dtype rule table: compiled once per program with the op table under
// SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp).
#if SYMFLOW_LIBRARY_OP_TABLE_DECLARED_ONLY
const std::vector<op_schema>& op_schemas();
#else
SYMFLOW_LIBRARY_LINKAGE const std::vector<op_schema>& op_schemas() {
  static const std::vector<op_schema> all = [] {
    std::vector<op_schema> v{
        // leaves that are nodes
        op_schema{"literal", node_kind::literal, 0, 0, {{"value", attribute_kind::number}, {"static", attribute_kind::boolean}}},
    };
    std::apply([&](auto... entry) { (v.push_back(detail::schema_of<decltype(entry)::kind, typename decltype(entry)::type>()), ...); },
               registered_ops{});
    // Control-flow ops (ir/control_flow/): kernels whose graph attributes hold the sub-graphs they call.
    std::apply([&](auto... op) { (v.push_back(detail::control_flow_schema(op)), ...); }, control_flow::registered{});
    std::sort(v.begin(), v.end(), [](const op_schema& a, const op_schema& b) { return a.name < b.name; });
    return v;
  }();
  return all;
}
#endif

// The file (in symflow/ops/) that defines the op named `name`, or an empty view.
inline std::string_view op_file_of(std::string_view name) {
  for (const auto& f : op_list::op_files)
    if (f.op == name) return f.file;
  return {};
}

// The schema of the op named `name`, or nullptr.
inline const op_schema* find_op_schema(std::string_view name) {
  const auto& all = op_schemas();
  auto it = std::lower_bound(all.begin(), all.end(), name,
                             [](const op_schema& s, std::string_view n) { return s.name < n; });
  return it != all.end() && it->name == name ? &*it : nullptr;
}

}  // namespace symflow
