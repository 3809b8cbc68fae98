#pragma once
// The interpreter's table of ops, built from `registered_ops` (ir/op_registry.hpp): for each op,
// what its own file provides — elementwise ops: the dtype rule, scalar function and SIMD packet
// function, instantiated for the operand dtypes a node has; reductions: identity, combine and finish;
// views and kernels: their runtime forms (a layout rule, or a shape rule and a CPU implementation)
// and, for kernels, the dtype rule that decides their result's dtype (ir/op_registry.hpp).
// Nothing here knows an op by name.
#include <array>
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../core/parallel.hpp"
#include "../eval/cpu/evaluators.hpp"
#include "../ir/graph.hpp"
#include "../ir/node_attributes.hpp"
#include "../ir/op_registry.hpp"
#include "../core/separate_compilation.hpp"
#include "chained_kernels.hpp"
#include "column_reduction.hpp"
#include "type_spelling.hpp"
#include "../ir/value.hpp"

namespace symflow {

struct elementwise_kernel {
  dtype result;
  tile_function run;
  // What a generated pass needs to call the same function (runtime/pass_codegen.hpp): the op's
  // C++ type with its attributes applied, and whether run uses its SIMD packet function over the
  // whole packets of a tile (else its scalar function everywhere).
  std::string (*op_type)() = nullptr;
  bool packet = false;
  // A transcendental op (one that declares `costly`: exp, tanh, ...): what computing it again
  // costs, weighed against reading it back (recompute_plan.hpp).
  bool costly = false;
  // The op's place among the ops that chain (chained_kernels.hpp), where run is its packet loop
  // over operands of the result's dtype; else -1.
  int chain = -1;
};

namespace runtime_detail {

template <class Op, class R, class... In>
inline constexpr bool tile_uses_packets =
    (std::is_same_v<In, R> && ...) && std::is_floating_point_v<R> && cpu::detail::has_packet<Op, R, sizeof...(In)>;

template <class Op, class R, class... In>
void tile_kernel(const void* const* in, void* out, std::size_t n) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    R* o = static_cast<R*>(out);
    const std::tuple<const In*...> p{static_cast<const In*>(in[I])...};
    std::size_t i = 0;
    if constexpr (tile_uses_packets<Op, R, In...>) {
      using P = simd::packet_t<R>;
      constexpr std::size_t width = simd::packet_size<R>;
      // Four packets per iteration: a tile's loop is a load or two, an op and a store per packet,
      // and the loop's own counting otherwise took as many slots as the work. (The same packets.)
#pragma GCC unroll 4
      for (; i + width <= n; i += width)
        simd::pm::pstoreu(o + i, Op::packet(simd::pm::ploadu<P>(std::get<I>(p) + i)...));
    }
    for (; i < n; ++i) o[i] = static_cast<R>(Op::apply(std::get<I>(p)[i]...));
  }(std::index_sequence_for<In...>{});
}

template <class Op, std::size_t N>
consteval bool takes() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return requires { Op::apply(((void)I, 1.0f)...); };
  }(std::make_index_sequence<N>{});
}
template <class Op>
inline constexpr std::size_t arity = takes<Op, 1>() ? 1 : takes<Op, 2>() ? 2 : 3;

// Calls f(T{}) for operand dtype d: any row for an op that takes storage dtypes (cast), else the
// compute rows alone (a storage operand never reaches such an op's kernel: storage_lowering.hpp).
template <class Op, class F>
decltype(auto) visit_operand_dtype(dtype d, F&& f) {
  if constexpr (detail::dtype_rule_rows<Op> == dtype_count) return visit_dtype(d, f);
  else return visit_compute_dtype(d, f);
}

// The kernel for operand dtypes in[0..arity), if the op's dtype rule accepts them.
template <class Op, class... Ts>
std::optional<elementwise_kernel> pick_kernel(const std::vector<dtype>& in) {
  if constexpr (sizeof...(Ts) == arity<Op>) {
    if constexpr (Op::template accepts<Ts...>) {
      using R = typename Op::template result_type<Ts...>;
      return elementwise_kernel{dtype_v<R>, &tile_kernel<Op, R, Ts...>, &type_spelling<Op>,
                                tile_uses_packets<Op, R, Ts...>, cpu::is_costly_op_v<Op>,
                                tile_uses_packets<Op, R, Ts...> ? chain_index<Op>() : -1};
    } else {
      return std::nullopt;
    }
  } else {
    return visit_operand_dtype<Op>(in[sizeof...(Ts)], [&](auto t) { return pick_kernel<Op, Ts..., decltype(t)>(in); });
  }
}

template <class Op>
std::optional<elementwise_kernel> elementwise_kernel_for(const node_attributes& a, const std::vector<dtype>& in) {
  if (in.size() != arity<Op>) return std::nullopt;
  if constexpr (detail::dtype_rule_rows<Op> != dtype_count)
    for (dtype d : in)
      if (!is_compute_dtype(d)) return std::nullopt;
  if constexpr (requires { Op::with_runtime_instance(a, [](auto) {}); })
    return Op::with_runtime_instance(a, [&](auto op) { return pick_kernel<decltype(op)>(in); });
  else
    return pick_kernel<Op>(in);
}

// One row's reduction, `start` combined with x[0..n): element j goes to lane j % 8, and the lanes
// are combined pairwise at the end. Eight independent chains where one chain of n dependent adds
// bounded the row by the adder's latency; the lanes are fixed, so the result does not depend on
// the machine's SIMD width.
template <class Op, class Acc, class T>
Acc reduce_row(Acc start, const T* x, std::size_t n) {
  constexpr std::size_t lanes = 8;
  if (n < 2 * lanes) {
    for (std::size_t j = 0; j < n; ++j) start = Op::combine(start, Acc(x[j]));
    return start;
  }
  std::array<Acc, lanes> lane;
  for (std::size_t k = 0; k < lanes; ++k) lane[k] = Acc(x[k]);
  std::size_t j = lanes;
  for (; j + lanes <= n; j += lanes)
    for (std::size_t k = 0; k < lanes; ++k) lane[k] = Op::combine(lane[k], Acc(x[j + k]));
  for (std::size_t k = 0; j < n; ++j, ++k) lane[k] = Op::combine(lane[k], Acc(x[j]));
  for (std::size_t width = lanes / 2; width > 0; width /= 2)
    for (std::size_t k = 0; k < width; ++k) lane[k] = Op::combine(lane[k], lane[k + width]);
  return Op::combine(start, lane[0]);
}

// Reduces `in` (contiguous, extents `ext`) over the axes marked in `reduced` into `out` (the kept
// axes in order). Floating sums accumulate in double (reductions whose order matters).
template <class Op, class T>
void reduce_typed(const T* in, const runtime_extents& ext, const std::vector<bool>& reduced, T* out) {
  using Acc = reduction_accumulator_t<Op, T>;
  const std::size_t rank = ext.size();
  std::size_t out_count = 1, count = 1;
  std::vector<std::size_t> out_strides(rank, 0);  // 0 along reduced axes
  for (std::size_t i = rank; i-- > 0;) {
    if (reduced[i]) {
      count *= ext[i];
    } else {
      out_strides[i] = out_count;
      out_count *= ext[i];
    }
  }
  std::vector<Acc> acc(out_count, Op::template identity<Acc>());
  const std::size_t total = element_count(ext);
  if (total) {
    const std::size_t inner = rank ? ext[rank - 1] : 1;
    const bool inner_reduced = rank && reduced[rank - 1];
    // Rows in order, the columns [j0, j1) of each (all of a row when its last axis is reduced).
    const auto rows = [&](std::size_t j0, std::size_t j1) {
      std::vector<std::size_t> index(rank, 0);
      for (std::size_t base = 0; base < total; base += inner) {
        std::size_t o = 0;
        for (std::size_t i = 0; i + 1 < rank; ++i) o += index[i] * out_strides[i];
        if (inner_reduced) {
          acc[o] = reduce_row<Op>(acc[o], in + base, inner);
        } else {
          for (std::size_t j = j0; j < j1; ++j) acc[o + j] = Op::combine(acc[o + j], Acc(in[base + j]));
        }
        for (std::size_t i = rank ? rank - 1 : 0; i-- > 0;) {
          if (++index[i] < ext[i]) break;
          index[i] = 0;
        }
      }
    };
    const std::size_t row_count = total / inner;
    if (inner_reduced) {
      rows(0, inner);
    } else if (out_count == inner) {
      // Every axis but the last reduced (a bias gradient's column sums): in blocks of rows, as a
      // fused pass computes it (column_reduction.hpp). Threads take columns, in shares of 16.
      cpu::parallel_ranges(total, 16 * row_count, [&](int, std::size_t begin, std::size_t end) {
        if (begin >= end) return;
        std::vector<Acc> part(inner);
        reduce_columns_in_blocks<Op>(in, row_count, inner, begin / row_count, end / row_count, acc.data(), part.data());
      });
    } else {
      // The last axis kept, and others: threads take columns, each summing its columns over the
      // rows in order, so the sums do not depend on the threads.
      cpu::parallel_ranges(total, 16 * row_count, [&](int, std::size_t begin, std::size_t end) {
        if (begin < end) rows(begin / row_count, end / row_count);
      });
    }
  }
  for (std::size_t i = 0; i < out_count; ++i) out[i] = static_cast<T>(Op::finish(acc[i], count));
}

// `rows` rows of `count` contiguous elements each reduced over the row into out[row]: what
// reduce_typed computes for a reduction over the last axis alone, row by row (the same function on
// the same elements, so the same bits). A fused pass runs it on its tiles' rows
// (row_reduction_plan.hpp).
template <class Op>
void reduce_rows_runtime(const void* in, dtype type, std::size_t rows, std::size_t count, void* out) {
  visit_compute_dtype(type, [&](auto t) {
    using T = decltype(t);
    if constexpr (!std::is_same_v<T, bool>) {
      using Acc = reduction_accumulator_t<Op, T>;
      const T* x = static_cast<const T*>(in);
      T* o = static_cast<T*>(out);
      for (std::size_t r = 0; r < rows; ++r)
        o[r] = static_cast<T>(Op::finish(reduce_row<Op>(Op::template identity<Acc>(), x + r * count, count), count));
    }
  });
}

template <class Op>
void reduce_runtime(const runtime_array& in, const std::vector<bool>& reduced, const runtime_array& out) {
  visit_compute_dtype(in.type, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, bool>)
      throw value_error(std::string(Op::name) + ": bool operands cannot be reduced");
    else
      reduce_typed<Op, T>(static_cast<const T*>(in.data), in.extents, reduced, out.as<T>());
  });
}
}  // namespace runtime_detail

// What the interpreter and the builder call for one op.
struct runtime_op {
  std::string_view name;
  node_kind kind;
  dtype_rule dtypes;  // elementwise ops and kernels: the op's own accepts/result_type over the dtype table
  std::optional<elementwise_kernel> (*elementwise)(const node_attributes&, const std::vector<dtype>&) = nullptr;
  void (*reduce)(const runtime_array& in, const std::vector<bool>& reduced, const runtime_array& out) = nullptr;
  // Reductions: contiguous rows reduced over their last axis (reduce_rows_runtime).
  void (*reduce_rows)(const void* in, dtype type, std::size_t rows, std::size_t count, void* out) = nullptr;
  // Reductions: every axis but the last reduced, in the steps a fused pass takes (column_reduction.hpp).
  column_reduction_functions reduce_columns{};
  runtime_layout (*view)(const node_attributes&, const runtime_layout&, const std::string& who) = nullptr;
  runtime_extents (*kernel_extents)(const node_attributes&, const std::vector<runtime_extents>&,
                                    const std::string& who) = nullptr;
  void (*kernel_run)(const node_attributes&, const runtime_array&, const std::vector<runtime_array>&) = nullptr;
  // A kernel that reads rank-2 operands with any strides (one of them 1): the interpreter hands it
  // transposed views where they lie instead of copying them (run_steps.hpp).
  bool strided_matrix_operands = false;
};

namespace runtime_detail {
template <class Entry>
runtime_op runtime_op_of() {
  using Op = typename Entry::type;
  runtime_op r{Op::name, Entry::kind, detail::dtype_rule_of<Entry::kind, Op>()};
  if constexpr (Entry::kind == node_kind::elementwise) {
    r.elementwise = &elementwise_kernel_for<Op>;
  } else if constexpr (Entry::kind == node_kind::reduction) {
    r.reduce = &reduce_runtime<Op>;
    r.reduce_rows = &reduce_rows_runtime<Op>;
    r.reduce_columns = column_reduction_functions_of<Op>();
  } else if constexpr (Entry::kind == node_kind::view) {
    r.view = [](const node_attributes& a, const runtime_layout& in, const std::string& who) {
      return Op::runtime_view(a, in, who);
    };
  } else {
    r.kernel_extents = [](const node_attributes& a, const std::vector<runtime_extents>& in, const std::string& who) {
      return Op::runtime_extents_of(a, in, who);
    };
    r.kernel_run = [](const node_attributes& a, const runtime_array& out, const std::vector<runtime_array>& in) {
      Op::run_runtime(a, out, in);
    };
    if constexpr (requires { Op::strided_matrix_operands; }) r.strided_matrix_operands = Op::strided_matrix_operands;
  }
  return r;
}
}  // namespace runtime_detail

// The runtime form of the op named `name`, or nullptr. Building this table instantiates every
// op's kernels for every dtype: see core/separate_compilation.hpp for compiling it once per program.
#if SYMFLOW_LIBRARY_OP_TABLE_DECLARED_ONLY
const runtime_op* find_runtime_op(std::string_view name);
#else
SYMFLOW_LIBRARY_LINKAGE const runtime_op* find_runtime_op(std::string_view name) {
  static const std::vector<runtime_op> all = [] {
    std::vector<runtime_op> v;
    std::apply([&](auto... entry) { (v.push_back(runtime_detail::runtime_op_of<decltype(entry)>()), ...); },
               registered_ops{});
    std::sort(v.begin(), v.end(), [](const runtime_op& a, const runtime_op& b) { return a.name < b.name; });
    return v;
  }();
  auto it = std::lower_bound(all.begin(), all.end(), name, [](const runtime_op& o, std::string_view n) { return o.name < n; });
  return it != all.end() && it->name == name ? &*it : nullptr;
}
#endif

// Elementwise operands broadcast NumPy-style: extents aligned from the right, 1 stretches.
inline runtime_extents broadcast_extents(const std::string& who, const std::vector<runtime_extents>& in) {
  std::size_t rank = 0;
  for (const auto& e : in) rank = std::max(rank, e.size());
  runtime_extents out(rank, 1);
  for (const auto& e : in) {
    for (std::size_t i = 0; i < e.size(); ++i) {
      std::size_t& o = out[rank - e.size() + i];
      const std::size_t x = e[i];
      if (x == o || x == 1) continue;
      if (o == 1) {
        o = x;
        continue;
      }
      std::string shapes;
      for (const auto& f : in) shapes += (shapes.empty() ? "" : " and ") + format_extents(f);
      throw shape_error(who + ": cannot broadcast " + shapes);
    }
  }
  return out;
}

inline std::vector<bool> reduced_axes_mask(const std::string& who, const node_attributes& a, std::size_t rank) {
  std::vector<bool> mask(rank, false);
  for (auto ax : a.integers("axes")) mask[runtime_axis(who, ax, rank)] = true;
  return mask;
}

struct inferred_type {
  dtype type;
  runtime_extents extents;
  std::optional<elementwise_kernel> kernel;  // elementwise nodes
};

// A node's dtype and extents from its operands' (all extents known), by the op's own rules.
inline inferred_type infer_node_type(const runtime_op& op, const node_attributes& attrs, const std::vector<dtype>& in_types,
                                     const std::vector<runtime_extents>& in_extents, const std::string& who) {
  inferred_type r{dtype::f32, {}, std::nullopt};
  if (op.kind != node_kind::view && !op.dtypes.takes_storage_dtypes() &&
      std::any_of(in_types.begin(), in_types.end(), [](dtype d) { return !is_compute_dtype(d); })) {
    // Operands of storage dtypes: typed as computed in their compute dtypes, the result stored as the
    // dtype rule says (ir/dtype_rule.hpp). No kernel: the interpreter runs the node widened
    // (storage_lowering.hpp).
    std::vector<dtype> wide(in_types.size());
    for (std::size_t k = 0; k < in_types.size(); ++k) wide[k] = compute_dtype(in_types[k]);
    r = infer_node_type(op, attrs, wide, in_extents, who);
    r.kernel.reset();
    if (!attrs.has("to")) r.type = dtype_rule::stored_as(in_types, r.type);
    return r;
  }
  switch (op.kind) {
    case node_kind::elementwise: {
      r.kernel = op.elementwise(attrs, in_types);
      if (!r.kernel) throw value_error(who + ": " + op.dtypes.refusal(op.name, in_types));
      r.type = r.kernel->result;
      r.extents = broadcast_extents(who, in_extents);
      break;
    }
    case node_kind::reduction: {
      r.type = in_types.at(0);
      const auto mask = reduced_axes_mask(who, attrs, in_extents.at(0).size());
      const bool keep = attrs.boolean("keepdims");
      for (std::size_t i = 0; i < mask.size(); ++i)
        if (!mask[i]) r.extents.push_back(in_extents[0][i]);
        else if (keep) r.extents.push_back(1);
      break;
    }
    case node_kind::view:
      r.type = in_types.at(0);
      r.extents = op.view(attrs, runtime_layout::contiguous(in_extents.at(0)), who).extents;
      break;
    default: {
      // A kernel reads its operands as the types its dtype rule admits: refused here, before any
      // kernel runs, where the rule refuses them (a matmul of f32 by f64 read 8-byte values as
      // floats, a concat of f64 and f32 read past the end of the f32 operand). The result's dtype is
      // the rule's, or the one a `to` attribute names (one_hot, reduced_count).
      const auto d = op.dtypes.result(in_types);
      if (!d) throw value_error(who + ": " + op.dtypes.refusal(op.name, in_types));
      r.type = attrs.has("to") ? attrs.dtype_of("to") : *d;
      r.extents = op.kernel_extents(attrs, in_extents, who);
    }
  }
  return r;
}

}  // namespace symflow
