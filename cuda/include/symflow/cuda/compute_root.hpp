#pragma once
// Computes one output of an evaluation from its root evaluator: a map or copy through run_map, a
// reduction or kernel op straight into the output, with check_numerics fused into the writing kernel
// where it can be, else as a scan of the written output.
#include <string>
#include <type_traits>

#include <symflow/core/tensor.hpp>

#include "fusion_groups.hpp"
#include "materialised_evaluators.hpp"
#include "numerics_flag.hpp"
#include "profile.hpp"
#include "utility_kernels.hpp"

namespace symflow::cuda {
namespace detail {

template <class Ev, class Ctx>
inline constexpr bool has_compute_into =
    requires(Ev& e, Ctx& c, typename Ev::value_type* p) { e.compute_into(p, c); };

template <class Ev>
inline constexpr bool is_reduction_eval_v = false;
template <class Node, class C>
inline constexpr bool is_reduction_eval_v<reduction_eval<Node, C>> = true;

// Computes one output. With `flag` (check_numerics on, floating-point output) the kernel that writes
// it also sets *flag on a NaN or infinity: maps and reductions check what they store at no extra
// pass; outputs written by other paths (cuBLAS, kernel ops) are scanned after they are written.
template <class Ev, class Ctx, class T>
void compute_root(Ev& ev, Ctx& ctx, T* out, unsigned* flag = nullptr) {
  constexpr bool checkable = std::is_floating_point_v<T>;
  if constexpr (checkable && fused_numerics_check && is_reduction_eval_v<Ev>) {
    if (flag) {
      ev.operand.prepare(ctx);
      run_reduce_checked<true, typename Ev::Op, T>(ev.operand, ctx, Ev::node_type::mask, out,
                                                   element_count<Ev::rank>(ev.extents), ev.reduced_count, ev.source,
                                                   flag);
      return;
    }
  } else if constexpr (checkable && fused_numerics_check && !has_compute_into<Ev, Ctx>) {
    if (flag) {
      run_map_checked<true>(ev, ctx, out, flag);
      return;
    }
  }
  if constexpr (requires { ev.compute_into(out, ctx); }) ev.compute_into(out, ctx);
  else run_map(ev, ctx, out);
  if constexpr (checkable)
    if (flag) {
      const profile_region timed(ctx.stream, [&] { return std::string("nonfinite_scan_kernel (check_numerics)"); });
      dev::scan_nonfinite(out, element_count<Ev::rank>(ev.extents), flag, ctx.stream);
    }
}

}  // namespace detail
}  // namespace symflow::cuda
