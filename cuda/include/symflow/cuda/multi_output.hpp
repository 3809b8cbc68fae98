#pragma once
// Several outputs in one evaluation (a loss and its gradients, or a whole training step):
// - one context, so a matmul or reduction the outputs share is computed once;
// - elementwise outputs and reductions over all axes that run over the same frame share ONE kernel
//   (every output's value at an element is computed before anything is stored, so the compiler
//   computes their common subexpressions once), with a small second kernel finishing the
//   reductions in a fixed order;
// - outputs may be the memory of inputs (an SGD step writes W - lr * dW over W): everything that is
//   materialised is computed before any output is written, an output read later by another output
//   (or by its own kernel at other indices) is computed into scratch memory and copied at the end.
#include <algorithm>
#include <array>
#include <tuple>
#include <type_traits>
#include <utility>

#include <symflow/eval/numerics.hpp>
#include <symflow/expr/reduction.hpp>

#include "compute_root.hpp"      // one output from its root evaluator
#include "fusion_groups.hpp"
#include "numerics_flag.hpp"     // check_numerics' device flag
#include "one_pass_launch.hpp"   // runs the outputs sharing one kernel
#include "one_pass_plan.hpp"     // which outputs can share one kernel
#include "output_overlap.hpp"    // outputs written over memory the evaluation reads

namespace symflow::cuda {
namespace detail {

// Evaluates every expression's evaluator into its output (`outs[i]`: dense memory of the output's
// extents). Shared work runs once; see the top of this file. Returns false when check_numerics is on
// and a floating-point output holds NaN or infinities (then it has waited for the evaluation);
// otherwise it returns without waiting.
template <class Exprs, class... Ev, class Ctx>
bool compute_outputs(std::tuple<Ev...>& evs, Ctx& ctx, const std::array<void*, sizeof...(Ev)>& outs) {
  constexpr std::size_t N = sizeof...(Ev);
  using plan = one_pass_plan<Exprs, Ev...>;
  unsigned* const numerics_flag = numerics_flag_for<Ev...>(ctx);
  // 1. Everything materialised, for all outputs, before any output is written.
  std::apply([&](auto&... ev) { (prepare_root(ev, ctx), ...); }, evs);

  bool grouped = false;
  if constexpr (plan::size >= 2) {
    grouped = [&]<std::size_t... K>(std::index_sequence<K...>) {
      const group_frame f = loop_frame(std::get<plan::members[0]>(evs));
      return (detail::same_frame(f, loop_frame(std::get<plan::members[K]>(evs))) && ...);  // not ADL: cpu::same_frame takes the same frame type
    }(std::make_index_sequence<plan::size>{});
  }
  // 2. Units run in output order (the one-pass group at its first member's place).
  std::array<int, N> unit_of{};
  int units = 0;
  for (std::size_t i = 0; i < N; ++i) {
    if (grouped && plan::in_group[i] && i != plan::first) unit_of[i] = unit_of[plan::first];
    else unit_of[i] = units++;
  }
  // Roots without compute_into write element by element (maps, copies); the others (reductions,
  // kernels) write their output as they go.
  constexpr std::array<bool, N> writes_by_element{!has_compute_into<Ev, Ctx>...};
  constexpr std::array<bool, N> is_reduction_output{is_full_reduction_v<Ev>...};
  std::array<output_memory, N> memory{};
  std::apply(
      [&](const auto&... ev) {
        std::size_t i = 0;
        ((memory[i] = output_of(outs[i], ev), ++i), ...);
      },
      evs);

  // 3. Outputs that must not be written in place: read by a unit that runs after them, or by their own
  // unit at other indices (reductions and kernels at the root write as they go: any read).
  std::array<bool, N> via_scratch{};
  auto check_reads = [&](std::size_t reader, const memory_read& r, bool root_writes_by_element) {
    for (std::size_t o = 0; o < N; ++o) {
      if (!overlaps(memory[o], r)) continue;
      if (unit_of[o] < unit_of[reader]) {
        via_scratch[o] = true;
      } else if (unit_of[o] == unit_of[reader]) {
        const bool group = grouped && plan::in_group[o];
        // In the one-pass kernel every value at an element is computed before any store, and
        // reductions are stored by the finishing kernel after all reads.
        const bool safe = group ? (is_reduction_output[o] || same_index(memory[o], r))
                                : (root_writes_by_element && same_index(memory[o], r));
        if (!safe) via_scratch[o] = true;
      }
    }
  };
  std::apply(
      [&](const auto&... ev) {
        std::size_t i = 0;
        ((visit_root_reads(ev, [&, reader = i](const memory_read& r) { check_reads(reader, r, writes_by_element[reader]); }),
          ++i),
         ...);
      },
      evs);

  std::array<void*, N> targets = outs;
  for (std::size_t i = 0; i < N; ++i)
    if (via_scratch[i] && memory[i].bytes) targets[i] = ctx.template allocate<unsigned char>(memory[i].bytes);

  // 4. Run the units in order.
  auto run_group = [&] {
    if constexpr (plan::size >= 2) {
      using T = typename plan::group_type;
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        const group_frame f = loop_frame(std::get<plan::members[0]>(evs));
        const std::array<T*, plan::size> group_outs{static_cast<T*>(targets[plan::members[K]])...};
        if constexpr (fused_numerics_check) {
          if (numerics_flag) {
            run_one_pass<true, T>(ctx, f, group_outs, std::tie(std::get<plan::members[K]>(evs)...), numerics_flag);
            return;
          }
        }
        run_one_pass<false, T>(ctx, f, group_outs, std::tie(std::get<plan::members[K]>(evs)...), nullptr);
        if constexpr (!fused_numerics_check) {
          if (numerics_flag)
            for (std::size_t k = 0; k < plan::size; ++k) {
              const std::size_t i = plan::members[k];
              dev::scan_nonfinite(group_outs[k], memory[i].bytes / sizeof(T), numerics_flag, ctx.stream);
            }
        }
      }(std::make_index_sequence<plan::size>{});
    }
  };
  auto run_unit = [&](auto& ev, std::size_t i) {
    if (grouped && plan::in_group[i]) {
      if (i == plan::first) run_group();
      return;
    }
    using T = typename std::remove_cvref_t<decltype(ev)>::value_type;
    compute_root(ev, ctx, static_cast<T*>(targets[i]), numerics_flag);
  };
  std::apply(
      [&](auto&... ev) {
        std::size_t i = 0;
        (run_unit(ev, i++), ...);
      },
      evs);
  for (std::size_t i = 0; i < N; ++i)
    if (targets[i] != outs[i])
      SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(outs[i], targets[i], memory[i].bytes, cudaMemcpyDeviceToDevice, ctx.stream));
  return numerics_flag_clear(numerics_flag, ctx.stream);
}

}  // namespace detail
}  // namespace symflow::cuda
