#pragma once
// An elementwise op's or a kernel's dtype rule as a table over the dtype table's rows, computed at
// compile time from the op's own typed rule (`accepts` and `result_type`), and how a graph whose
// values have storage dtypes (core/dtype.hpp: f16, bf16, the small and unsigned integers) is typed
// by it. The op registry (op_registry.hpp) builds one per op; validate(), the interpreter and the
// builder ask it.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../core/dtype.hpp"

namespace symflow {

// For every combination of `operands` operand dtypes among the table's first `rows` rows, the dtype
// the op's `result_type` gives where its `accepts` admits them, else -1. A kernel reads its operands
// as the C++ types this rule admits (concat copies bytes of its result's size from each operand), so
// a graph whose kernel operands it refuses is refused before anything runs: by validate(), on the
// dtypes the graph declares, and by the interpreter and the builder, on the dtypes a run has
// (infer_node_type). An op with a `to` attribute (cast, one_hot, reduced_count) gives that dtype
// instead of `result`.
//
// Most ops' tables cover the compute dtypes alone (rows = compute_dtype_count): an operand of a
// storage dtype reads as its compute dtype (f16 as f32, u8 as i32), and the result is stored in the
// dtype of the first operand that computes in the result's dtype (f16 + f16 is f16, gather of u8 data
// by i32 indices is u8, f16 < f16 is bool). The interpreter runs such a node in the compute dtypes
// (runtime/storage_lowering.hpp). An op that converts storage values itself (cast) declares
// `takes_storage_dtypes` and its table covers every row.
struct dtype_rule {
  std::size_t operands = 0;  // 0: no rule (views and reductions take any dtype; literals none)
  bool variadic = false;     // any number of operands: each after the first is checked with the first
  const std::int8_t* table = nullptr;  // rows^operands entries, operand 0 varying slowest
  std::size_t rows = compute_dtype_count;  // the dtype table's rows the table covers

  // Whether the op takes operands of every dtype as they are (else storage dtypes are widened).
  bool takes_storage_dtypes() const { return rows == dtype_count; }

  // The result dtype for operand dtypes `in`, or nullopt where the rule refuses them.
  std::optional<dtype> result(const std::vector<dtype>& in) const {
    if (takes_storage_dtypes()) return computed(in);
    std::vector<dtype> wide(in.size());
    for (std::size_t k = 0; k < in.size(); ++k) wide[k] = compute_dtype(in[k]);
    const auto r = computed(wide);
    return r ? std::optional<dtype>(stored_as(in, *r)) : r;
  }
  // The dtype a result computed in `computed` is stored in, for operands `in`: that of the first
  // operand computing in it (a storage dtype stays itself), else `computed`.
  static dtype stored_as(const std::vector<dtype>& in, dtype computed) {
    for (dtype d : in)
      if (compute_dtype(d) == computed) return d;
    return computed;
  }
  // "(f32, f32) or (f64, f64)": every combination the rule admits; "" for more than `limit`.
  std::string accepted(std::size_t limit = 6) const {
    std::vector<std::string> all;
    std::size_t combinations = 1;
    for (std::size_t k = 0; k < operands; ++k) combinations *= rows;
    for (std::size_t c = 0; c < combinations; ++c) {
      if (table[c] < 0) continue;
      std::string text = "(";
      for (std::size_t k = 0, rest = c; k < operands; ++k) {
        std::size_t below = 1;
        for (std::size_t j = k + 1; j < operands; ++j) below *= rows;
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
      text += "; " + std::string(op) + " takes " + ok + (variadic ? ", each operand with the first" : "") +
              (takes_storage_dtypes() ? "" : " (a storage dtype as the dtype it computes in)");
    return text;
  }

 private:
  std::optional<dtype> computed(const std::vector<dtype>& in) const {
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
  std::optional<dtype> entry(const std::vector<dtype>& in) const {
    std::size_t c = 0;
    for (auto d : in) {
      if (static_cast<std::size_t>(d) >= rows) return std::nullopt;  // not covered (or a corrupt value)
      c = c * rows + static_cast<std::size_t>(d);
    }
    return table[c] < 0 ? std::nullopt : std::optional<dtype>(static_cast<dtype>(table[c]));
  }
};

namespace detail {
// The rows an op's dtype rule covers: every row for an op that declares `takes_storage_dtypes`.
template <class Op>
inline constexpr std::size_t dtype_rule_rows = [] {
  if constexpr (requires { Op::takes_storage_dtypes; }) return Op::takes_storage_dtypes ? dtype_count : compute_dtype_count;
  else return compute_dtype_count;
}();

// The dtype rule's table (dtype_rule): entry C holds operand k's dtype in digit k of C in base
// `Rows`, most significant first.
consteval std::size_t dtype_combinations(std::size_t operands, std::size_t rows) {
  std::size_t n = 1;
  for (std::size_t k = 0; k < operands; ++k) n *= rows;
  return n;
}
template <std::size_t C, std::size_t N, std::size_t K, std::size_t Rows>
struct combination_operand {
  using type = typename dtype_row_t<C / dtype_combinations(N - 1 - K, Rows) % Rows>::type;
};
template <class Op, class... Ts>
consteval std::int8_t rule_entry() {
  if constexpr (Op::template accepts<Ts...>) return static_cast<std::int8_t>(dtype_v<typename Op::template result_type<Ts...>>);
  else return -1;
}
template <class Op, std::size_t N, std::size_t C>
consteval std::int8_t rule_entry_at() {
  return []<std::size_t... K>(std::index_sequence<K...>) {
    return rule_entry<Op, typename combination_operand<C, N, K, dtype_rule_rows<Op>>::type...>();
  }(std::make_index_sequence<N>{});
}
template <class Op, std::size_t N>
inline constexpr auto dtype_rule_table = []<std::size_t... C>(std::index_sequence<C...>) {
  return std::array<std::int8_t, sizeof...(C)>{rule_entry_at<Op, N, C>()...};
}(std::make_index_sequence<dtype_combinations(N, dtype_rule_rows<Op>)>{});

template <std::size_t>
struct first_dtype {  // a struct, not an alias template: nvcc expands such an alias before the pack
  using type = typename dtype_row_t<0>::type;
};
template <class Op, std::size_t N>
consteval bool declares_accepts() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return requires { Op::template accepts<typename first_dtype<I>::type...>; };
  }(std::make_index_sequence<N>{});
}
}  // namespace detail

}  // namespace symflow
