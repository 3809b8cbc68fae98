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

#include "../expr/node.hpp"
#include "../ops/all.hpp"
#include "control_flow/list.hpp"

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

// An elementwise op's or a kernel's dtype rule over the dtype table: for every combination of
// `operands` operand dtypes, the dtype its `result_type` gives where its `accepts` admits them, else
// -1, computed at compile time from the op's own typed rule. A kernel reads its operands as the C++
// types this rule admits (concat copies bytes of its result's size from each operand), so a graph
// whose kernel operands it refuses is refused before anything runs: by validate(), on the dtypes the
// graph declares, and by the interpreter and the builder, on the dtypes a run has (infer_node_type).
// An op with a `to` attribute (cast, one_hot, reduced_count) gives that dtype instead of `result`.
struct dtype_rule {
  std::size_t operands = 0;  // 0: no rule (views and reductions take any dtype; literals none)
  bool variadic = false;     // any number of operands: each after the first is checked with the first
  const std::int8_t* table = nullptr;  // dtype_count^operands entries, operand 0 varying slowest

  // The result dtype for operand dtypes `in`, or nullopt where the rule refuses them.
  std::optional<dtype> result(const std::vector<dtype>& in) const {
    if (variadic) {
      if (in.empty()) return std::nullopt;
      std::optional<dtype> r;
      for (std::size_t k = in.size() > 1 ? 1 : 0; k < in.size(); ++k) {
        const auto d = entry({in[0], in[k]});
        if (!d) return std::nullopt;
        if (!r) r = d;
      }
      return r;
    }
    if (in.size() != operands) return std::nullopt;
    return entry(in);
  }
  // "(f32, f32) or (f64, f64)": every combination the rule admits; "" for more than `limit`.
  std::string accepted(std::size_t limit = 6) const {
    std::vector<std::string> all;
    std::size_t combinations = 1;
    for (std::size_t k = 0; k < operands; ++k) combinations *= dtype_count;
    for (std::size_t c = 0; c < combinations; ++c) {
      if (table[c] < 0) continue;
      std::string text = "(";
      for (std::size_t k = 0, rest = c; k < operands; ++k) {
        std::size_t below = 1;
        for (std::size_t j = k + 1; j < operands; ++j) below *= dtype_count;
        text += (k ? ", " : "") + std::string(dtype_infos[rest / below].name);
        rest %= below;
      }
      all.push_back(text + ")");
    }
    if (all.empty() || all.size() > limit) return {};
    std::string out = all[0];
    for (std::size_t i = 1; i < all.size(); ++i) out += (i + 1 == all.size() ? " or " : ", ") + all[i];
    return out;
  }
  // "operands of dtypes (f32, f64) are not accepted; matmul takes (f32, f32) or (f64, f64)"
  std::string refusal(std::string_view op, const std::vector<dtype>& in) const {
    std::string list;
    for (auto d : in) list += (list.empty() ? "" : ", ") + std::string(dtype_name(d));
    std::string text = "operands of dtypes (" + list + ") are not accepted";
    if (const std::string ok = accepted(); !ok.empty())
      text += "; " + std::string(op) + " takes " + ok + (variadic ? ", each operand with the first" : "");
    return text;
  }

 private:
  std::optional<dtype> entry(const std::vector<dtype>& in) const {
    std::size_t c = 0;
    for (auto d : in) {
      if (!find_dtype_info(d)) return std::nullopt;  // no enumerator (a corrupt value)
      c = c * dtype_count + static_cast<std::size_t>(d);
    }
    return table[c] < 0 ? std::nullopt : std::optional<dtype>(static_cast<dtype>(table[c]));
  }
};

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

// The dtype rule's table (dtype_rule): entry C holds operand k's dtype in digit k of C in base
// dtype_count, most significant first.
consteval std::size_t dtype_combinations(std::size_t operands) {
  std::size_t n = 1;
  for (std::size_t k = 0; k < operands; ++k) n *= dtype_count;
  return n;
}
template <std::size_t C, std::size_t N, std::size_t K>
struct combination_operand {
  using type = typename dtype_row_t<C / dtype_combinations(N - 1 - K) % dtype_count>::type;
};
template <class Op, class... Ts>
consteval std::int8_t rule_entry() {
  if constexpr (Op::template accepts<Ts...>) return static_cast<std::int8_t>(dtype_v<typename Op::template result_type<Ts...>>);
  else return -1;
}
template <class Op, std::size_t N, std::size_t C>
consteval std::int8_t rule_entry_at() {
  return []<std::size_t... K>(std::index_sequence<K...>) {
    return rule_entry<Op, typename combination_operand<C, N, K>::type...>();
  }(std::make_index_sequence<N>{});
}
template <class Op, std::size_t N>
inline constexpr auto dtype_rule_table = []<std::size_t... C>(std::index_sequence<C...>) {
  return std::array<std::int8_t, sizeof...(C)>{rule_entry_at<Op, N, C>()...};
}(std::make_index_sequence<dtype_combinations(N)>{});

template <std::size_t>
struct first_dtype {  // a struct, not an alias template: see square_shape
  using type = typename dtype_row_t<0>::type;
};
template <class Op, std::size_t N>
consteval bool declares_accepts() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return requires { Op::template accepts<typename first_dtype<I>::type...>; };
  }(std::make_index_sequence<N>{});
}

// The dtype rule of an elementwise op or a kernel, from its own `accepts` and `result_type`.
template <node_kind Kind, class Op>
dtype_rule dtype_rule_of() {
  if constexpr (Kind == node_kind::elementwise || Kind == node_kind::kernel) {
    constexpr std::size_t n = rule_operands<Kind, Op>();
    static_assert(declares_accepts<Op, n>(),
                  "symflow: a listed elementwise op or kernel declares the operand dtypes it accepts: "
                  "template <class... T> static constexpr bool accepts (its dtype rule, with result_type)");
    return dtype_rule{n, variadic_kernel<Kind, Op>, dtype_rule_table<Op, n>.data()};
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

// Every op a graph value may contain, sorted by name.
inline const std::vector<op_schema>& op_schemas() {
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
