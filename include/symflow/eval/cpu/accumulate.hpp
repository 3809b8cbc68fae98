#pragma once
// Evaluation with outputs added into memory that already holds a value: target += alpha * expr,
// beside ordinary outputs, in one evaluation (one context: work they share is done once).
//
// An optimiser whose update is linear in the gradient (SGD: w += -lr g) hands the trainer its
// scale, and the trainer adds each weight's gradient into the weight this way. A kernel whose op
// `accumulates` (a matrix product: the GEMM with beta = 1) adds into the target as it computes,
// so a weight gradient x^T g is never stored, read back and added in a pass of its own; any other
// expression is computed into scratch memory and added in one pass. An optimiser whose update is
// not linear (Adam, momentum) hands the trainer an elementwise update instead, run over each block
// of the gradient as it is computed (updated_output below).
//
// Targets are written last: first every accumulated kernel's operands are made ready (an operand
// that lies in a target's memory, a transposed weight, is copied) and every other accumulated
// expression is computed; then the ordinary outputs; then the additions and updates, in order.
// Nothing that is read therefore sees a target half updated. check_numerics is not applied here (nn::trainer
// evaluates without accumulation when it is on).
#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../../core/error.hpp"
#include "../../core/tensor.hpp"
#include "../../core/thread_tasks.hpp"
#include "eval.hpp"

namespace symflow {

// target += alpha * expression; target a view of contiguous memory with the expression's extents.
template <class View, class E>
struct accumulated_output {
  View target;
  typename View::value_type alpha;
  E expression;
};
template <class View, class E>
accumulated_output(View, typename View::value_type, E) -> accumulated_output<View, E>;

// update(offset, block, count) over blocks of expression's value, in row-major element order: the
// blocks are disjoint, cover every element once, and may be handed to several threads at once; all
// but the last hold a multiple of 16 elements, so that an elementwise rule meets the SIMD lanes at
// the offsets a single pass over the whole value would. `target` is the memory the update writes
// (the parameter; an optimiser's state besides, which the evaluation never reads): as with an
// accumulated output it must not be read once the updates start. A weight gradient's product is
// computed a block of rows at a time into a per-thread buffer and updated from there, in cache
// (an Adam step then never writes the gradient to memory and reads it back); any other expression
// is computed into scratch memory first and updated in one call.
template <class View, class E, class Update>
struct updated_output {
  View target;
  E expression;
  Update update;
};
template <class View, class E, class Update>
updated_output(View, E, Update) -> updated_output<View, E, Update>;

namespace cpu {

// True when E is a kernel node whose op adds its result into memory (run_cpu_scaled) for these
// operands.
template <class E>
inline constexpr bool accumulates_in_place_v = false;
template <class Op, class... A>
inline constexpr bool accumulates_in_place_v<kernel_node<Op, A...>> = [] {
  if constexpr (requires { Op::template accumulates<A...>; }) return bool(Op::template accumulates<A...>);
  else return false;
}();

// True when E is a kernel node whose op computes blocks of rows of its result (run_cpu_rows).
template <class E>
inline constexpr bool computes_row_blocks_v = false;
template <class Op, class... A>
inline constexpr bool computes_row_blocks_v<kernel_node<Op, A...>> = [] {
  if constexpr (requires { Op::template computes_row_blocks<A...>; }) return bool(Op::template computes_row_blocks<A...>);
  else return false;
}();

namespace detail {
template <class Acc>
inline constexpr bool is_updated_output_v = false;
template <class View, class E, class Update>
inline constexpr bool is_updated_output_v<updated_output<View, E, Update>> = true;

// Whether an output's kernel runs in step 3 on operands made ready in step 1: a product added into
// its target, or one computed a block of rows at a time for an update.
template <class Acc, class Ev>
inline constexpr bool kernel_in_step_3_v = false;
template <class Acc, class Node, class... C>
inline constexpr bool kernel_in_step_3_v<Acc, kernel_eval<Node, C...>> =
    is_updated_output_v<Acc> ? computes_row_blocks_v<Node> : accumulates_in_place_v<Node>;

// Rows per block of an updated product of `inner` terms per element and `columns` columns: about
// 2^15 elements (128 KiB of floats, in a core's L2 beside the weight and moments the update
// streams through, on machines with 512 KiB of L2 per core too), and up to 2^20 to
// have at least `inner` rows: each block's GEMM packs the whole right-hand operand (inner x
// columns) again, which then costs at most one element copied per element computed (beyond that
// the product's inner * columns multiply-adds per block dwarf the copies). A multiple of 16 rows.
inline std::size_t rows_per_update_block(std::size_t columns, std::size_t inner) {
  const std::size_t c = std::max<std::size_t>(columns, 1);
  const std::size_t rows = std::max((std::size_t(1) << 15) / c, std::min(inner, (std::size_t(1) << 20) / c));
  return (rows + 15) / 16 * 16;
}
struct update_blocks;  // thread_buffer's tag

// An updated product, a block of rows per task: each block's GEMM into the running thread's buffer,
// then the update over it.
template <class T, class Ev, class Acc, class... Operands>
void update_by_row_blocks(Ev& ev, const Acc& acc, const Operands&... operands) {
  const std::size_t rows = ev.extents[0], columns = ev.extents[1], inner = std::get<0>(std::tie(operands...)).extent(1);
  // As many blocks as that size asks for, rounded up to a multiple of the thread count and the
  // rows shared out evenly: four blocks of 256 rows and one of 16 on two threads left one thread
  // idle for a block (Adam's W4 step at batch 256 took 6% longer than storing the gradient).
  // The partition does not change a result: each row's sums and each element's rule are its own.
  const std::size_t threads = std::size_t(std::max(1, max_threads()));
  const std::size_t size_asked = rows_per_update_block(columns, inner);
  std::size_t blocks = (rows + size_asked - 1) / size_asked;
  if (blocks > 1 || rows >= 16 * threads) blocks = (blocks + threads - 1) / threads * threads;
  const std::size_t per_block = std::max<std::size_t>(16, ((rows + blocks - 1) / blocks + 15) / 16 * 16);
  blocks = (rows + per_block - 1) / per_block;
  const double work = double(rows) * double(columns) * double(inner);
  run_tasks(blocks, work, [&](std::size_t k) {
    const std::size_t first = k * per_block, count = std::min(per_block, rows - first);
    T* block = thread_buffer<T, update_blocks>(per_block * columns);
    ev.op.template run_cpu_rows<T>(block, first, count, operands...);
    acc.update(first * columns, static_cast<const T*>(block), count * columns);
  });
}

// Whether a strided view's elements and a contiguous range share memory.
template <class V, class T>
bool overlaps(const V& view, const T* begin, std::size_t size) {
  if (view.size() == 0 || size == 0) return false;
  std::size_t last = 0;
  for (std::size_t i = 0; i < V::rank; ++i) last += (view.extent(i) - 1) * view.strides()[i];
  const auto* lo = reinterpret_cast<const unsigned char*>(view.data());
  const auto* hi = reinterpret_cast<const unsigned char*>(view.data() + last + 1);
  const auto* b = reinterpret_cast<const unsigned char*>(begin);
  return lo < reinterpret_cast<const unsigned char*>(begin + size) && b < hi;
}

// A view copied into the context's scratch memory, contiguous.
template <class V, class Ctx>
V copied(const V& view, Ctx& ctx) {
  using T = std::remove_const_t<typename V::value_type>;
  T* buffer = ctx.template allocate<T>(view.size());
  std::size_t k = 0;
  if constexpr (V::rank == 2) {
    for (std::size_t i = 0; i < view.extent(0); ++i)
      for (std::size_t j = 0; j < view.extent(1); ++j)
        buffer[k++] = view.data()[i * view.strides()[0] + j * view.strides()[1]];
  } else {
    static_assert(V::rank == 2, "cpu::detail::copied: matrices only");
  }
  return V(buffer, view.extents());
}

// An operand replaced by a copy when some accumulated output's target overlaps it.
template <class V, class Accumulations, class Ctx>
void copy_if_written(V& operand, const Accumulations& accumulations, Ctx& ctx) {
  const bool hit = std::apply(
      [&](const auto&... acc) { return (overlaps(operand, acc.target.data(), acc.target.size()) || ...); }, accumulations);
  if (hit) operand = copied(operand, ctx);
}

// What step 1 leaves for an accumulated output: the kernel's operand views, or the computed value.
template <class Ev>
struct prepared_accumulation {
  using T = typename Ev::value_type;
  const T* computed = nullptr;
};
template <class Node, class... C>
struct prepared_accumulation<kernel_eval<Node, C...>> {
  using T = typename Node::value_type;
  std::tuple<tensor_view<const typename C::value_type, dyn_shape<C::rank>>...> operands;
  const T* computed = nullptr;
};
}  // namespace detail
}  // namespace cpu

// eval_accumulating(std::tie(loss_tensor, ...), std::tuple{loss, ...},
//                   std::tuple{accumulated_output{w_view, -lr, dW}, ...}, feeds..., params):
// the ordinary outputs as eval_into computes them, then target += alpha * expression for each
// accumulated output.
template <class... Out, class... E, class... Acc, class... Sources>
void eval_accumulating(std::tuple<Out&...> outs, const std::tuple<E...>& expressions,
                       const std::tuple<Acc...>& accumulations, const Sources&... sources) {
  constexpr std::size_t k = sizeof...(E), m = sizeof...(Acc);
  static_assert(k == sizeof...(Out), "symflow: eval_accumulating needs one output tensor per expression");
  const auto args = std::apply(
      [&](const auto&... e) {
        return std::apply([&](const auto&... a) { return tie_plain(e..., a.expression...); }, accumulations);
      },
      expressions);
  [&]<std::size_t... X, std::size_t... A>(std::index_sequence<X...>, std::index_sequence<A...>) {
    using all = std::tuple<std::remove_cvref_t<decltype(get<X>(args))>..., std::remove_cvref_t<decltype(get<k + A>(args))>...>;
    detail::log_compiled_placement(tie_plain(get<X>(args)..., get<k + A>(args)...));
    cpu::outputs_context<all, Sources...> ctx(sources...);
    auto outputs_memory = cpu::evaluators_in_place(std::index_sequence<X...>{}, args, ctx);
    auto accumulated_memory = cpu::evaluators_in_place(std::index_sequence<(k + A)...>{}, args, ctx);
    auto& evs = *outputs_memory;
    auto& acc_evs = *accumulated_memory;
    // 0. Every target fits its expression (nothing is computed before this holds).
    (
        [&] {
          const auto& target = std::get<A>(accumulations).target;
          const auto& ev = get<A>(acc_evs);
          if (!target.is_contiguous() || !std::equal(target.extents().begin(), target.extents().end(), ev.extents.begin(),
                                                     ev.extents.end()))
            throw shape_error("eval_accumulating: accumulated output " + std::to_string(A) + " adds a value of extents " +
                              format_extents(ev.extents) + " into a target of extents " +
                              format_extents(target.extents()) + (target.is_contiguous() ? "" : " (not contiguous)"));
        }(),
        ...);
    // 1. What the accumulations read, before any target changes.
    auto prepared = std::tuple{cpu::detail::prepared_accumulation<std::remove_cvref_t<decltype(get<A>(acc_evs))>>{}...};
    (
        [&] {
          auto& ev = get<A>(acc_evs);
          auto& p = std::get<A>(prepared);
          using Ev = std::remove_cvref_t<decltype(ev)>;
          using T = typename Ev::value_type;
          if constexpr (cpu::detail::kernel_in_step_3_v<std::tuple_element_t<A, std::tuple<Acc...>>, Ev>) {
            [&]<std::size_t... I>(std::index_sequence<I...>) {
              p.operands = std::tuple{ev.template operand_view<I>(ctx)...};
            }(std::make_index_sequence<std::tuple_size_v<decltype(p.operands)>>{});
          } else {
            T* scratch = ctx.template allocate<T>(element_count<Ev::rank>(ev.extents));
            cpu::compute(ev, ctx, scratch);
            p.computed = scratch;
          }
        }(),
        ...);
    // An operand lying in memory some accumulated output writes is read from a copy.
    (
        [&] {
          auto& p = std::get<A>(prepared);
          if constexpr (cpu::detail::kernel_in_step_3_v<std::tuple_element_t<A, std::tuple<Acc...>>,
                                                        std::remove_cvref_t<decltype(get<A>(acc_evs))>>) {
            std::apply([&](auto&... operand) { (cpu::detail::copy_if_written(operand, accumulations, ctx), ...); },
                       p.operands);
          }
        }(),
        ...);
    // 2. The ordinary outputs.
    (
        [&] {
          auto& out = std::get<X>(outs);
          if (out.extents() != get<X>(evs).extents || out.data() == nullptr)
            out = std::remove_cvref_t<decltype(out)>(get<X>(evs).extents, uninitialized);
        }(),
        ...);
    if constexpr (k > 0) cpu::compute_outputs(evs, ctx, outs);
    // 3. The additions and updates.
    (
        [&] {
          const auto& acc = std::get<A>(accumulations);
          auto& ev = get<A>(acc_evs);
          auto& p = std::get<A>(prepared);
          using R = std::remove_cvref_t<decltype(ev)>;
          using T = typename R::value_type;
          constexpr bool kernel = cpu::detail::kernel_in_step_3_v<std::tuple_element_t<A, std::tuple<Acc...>>, R>;
          if constexpr (cpu::detail::is_updated_output_v<std::tuple_element_t<A, std::tuple<Acc...>>>) {
            if constexpr (kernel) {
              std::apply([&](const auto&... operand) { cpu::detail::update_by_row_blocks<T>(ev, acc, operand...); },
                         p.operands);
            } else {
              acc.update(std::size_t(0), static_cast<const T*>(p.computed), acc.target.size());
            }
          } else if (p.computed) {
            T* target = acc.target.data();
            const std::size_t n = acc.target.size();
            for (std::size_t i = 0; i < n; ++i) target[i] += acc.alpha * p.computed[i];
          } else if constexpr (kernel) {
            std::apply(
                [&](const auto&... operand) {
                  ev.op.template run_cpu_scaled<T>(tensor_view<T, dyn_shape<R::rank>>(acc.target.data(), ev.extents),
                                                   acc.alpha, T(1), operand...);
                },
                p.operands);
          }
          if constexpr (kernel) ++cpu::counters().kernels;
        }(),
        ...);
    (void)m;
  }(std::make_index_sequence<k>{}, std::make_index_sequence<m>{});
}

}  // namespace symflow
