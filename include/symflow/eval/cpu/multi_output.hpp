#pragma once
#include <array>
#include <tuple>
#include <type_traits>

#include "../../core/tensor.hpp"
#include "evaluators.hpp"

namespace symflow::cpu {

// Several outputs of one evaluation (a loss and its gradients) share one context, so a matmul or
// reduction they have in common is computed once. Outputs that are elementwise maps or reductions
// over all axes, over the same frame, are computed in ONE pass: per element every output's value is
// computed before anything is stored, so the compiler computes their common subexpressions once.

template <class Ev>
inline constexpr bool is_full_reduction_v = false;
template <class Node, class C>
inline constexpr bool is_full_reduction_v<reduction_eval<Node, C>> = [] {
  for (bool m : Node::mask)
    if (!m) return false;
  return true;
}();
template <class Ev>
inline constexpr bool is_elementwise_eval_v = false;
template <class Op, class T, std::size_t R, class... C>
inline constexpr bool is_elementwise_eval_v<elementwise_eval<Op, T, R, C...>> = true;
template <class Node, class Inner>
inline constexpr bool is_elementwise_eval_v<reused_eval<Node, Inner>> = true;

// Outputs that can join a one-pass group.
template <class Ev>
inline constexpr bool one_pass_candidate_v = is_full_reduction_v<Ev> || is_elementwise_eval_v<Ev>;

template <class T, class Ev>
struct map_output {
  Ev ev;
  T* out;
  frame_strides out_strides{};
  T* row_out = nullptr;
  static constexpr bool vectorizable = detail::packet_path<T, Ev>;
  void bind(const frame& f) {
    ev.bind_frame(f);
    for (std::size_t i = f.rank, acc = 1; i-- > 0;) {
      out_strides[i] = acc;
      acc *= f.extents[i];
    }
  }
  template <class F>
  void visit(F&& f) {
    f(out_strides);
    ev.visit_strides(f);
  }
  void row(const frame& f, const row_cursor& c) {
    ev.set_row(f, c);
    row_out = out + c.offset(f, out_strides);
  }
  template <class P, bool Dense>
  SYMFLOW_INLINE P value(std::size_t j) const {
    return ev.template packet<P, Dense>(j);
  }
  SYMFLOW_INLINE T value(std::size_t j) const { return ev.scalar(j); }
  template <class P>
  SYMFLOW_INLINE void take(std::size_t j, const P& p) {
    simd::pm::pstoreu(row_out + j, p);
  }
  SYMFLOW_INLINE void take(std::size_t j, T v) { row_out[j] = v; }
  void flush() {}
};

template <class T, class Op, class Ev>
struct reduce_output {
  using op_type = Op;
  Ev ev;
  T* out;
  std::size_t count;
  T total = Op::template identity<T>();
  simd::packet_t<T> acc = simd::pm::pset1<simd::packet_t<T>>(Op::template identity<T>());
  static constexpr bool vectorizable = detail::packet_path<T, Ev>;
  void bind(const frame& f) { ev.bind_frame(f); }
  template <class F>
  void visit(F&& f) {
    ev.visit_strides(f);
  }
  void row(const frame& f, const row_cursor& c) { ev.set_row(f, c); }
  template <class P, bool Dense>
  SYMFLOW_INLINE P value(std::size_t j) const {
    return ev.template packet<P, Dense>(j);
  }
  SYMFLOW_INLINE T value(std::size_t j) const { return ev.scalar(j); }
  template <class P>
  SYMFLOW_INLINE void take(std::size_t, const P& p) {
    acc = Op::packet_combine(acc, p);
  }
  SYMFLOW_INLINE void take(std::size_t, T v) { total = Op::combine(total, v); }
  void flush() {
    total = Op::combine(total, T(Op::packet_reduce(acc)));
    acc = simd::pm::pset1<simd::packet_t<T>>(Op::template identity<T>());
  }
};

template <class O>
inline constexpr bool is_reduce_output_v = false;
template <class T, class Op, class Ev>
inline constexpr bool is_reduce_output_v<reduce_output<T, Op, Ev>> = true;

// Runs every output over one frame in one pass.
template <class T, class... O>
void run_one_pass(frame f, O&... outputs) {
  (outputs.bind(f), ...);
  std::array<frame_strides*, 64> arrays{};
  std::size_t count = 0;
  bool overflow = false;
  auto add = [&](frame_strides& s) {
    if (count < arrays.size()) arrays[count++] = &s;
    else overflow = true;
  };
  (outputs.visit(add), ...);
  if (!overflow && count > 0) collapse(f, arrays.data(), count);

  constexpr bool vec = (O::vectorizable && ...);
  constexpr std::size_t width = vec ? std::size_t(simd::packet_size<T>) : 1;
  const std::size_t inner = f.inner();
  // Where every array of the pass (outputs included) runs along the inner axis with stride 1, the
  // packets are read without per-leaf stride tests: an optimiser update reads four arrays and
  // writes three, and the tests took a tenth of its time at the memory floor.
  bool dense = !overflow;
  for (std::size_t k = 0; k < count && dense; ++k) dense = (*arrays[k])[f.rank - 1] == 1;
  constexpr std::size_t max_threads_supported = 256;
  std::array<std::array<T, sizeof...(O)>, max_threads_supported> partials{};
  std::array<bool, max_threads_supported> used{};
  parallel_ranges(f.size(), width, [&](std::size_t thread, std::size_t begin, std::size_t end) {
    if (begin >= end || thread >= max_threads_supported) return;
    auto local = plain_tuple<O...>{{{outputs}...}};
    row_cursor cursor;
    cursor.seek(f, begin / inner);
    std::size_t j = begin % inner;
    while (begin < end) {
      apply_plain([&](auto&... o) { (o.row(f, cursor), ...); }, local);
      const std::size_t stop = std::min(inner, j + (end - begin));
      begin += stop - j;
      while (j < stop) {
        const std::size_t block_end = std::min(stop, j + 4096);
        if constexpr (vec) {
          using P = simd::packet_t<T>;
          const auto packets = [&]<bool Dense>(std::bool_constant<Dense>) {
            for (; j + width <= block_end; j += width) {
              apply_plain(
                  [&](auto&... o) {
                    // all computed before any store
                    const auto values = std::tuple{o.template value<P, Dense>(j)...};
                    [&]<std::size_t... I>(std::index_sequence<I...>) {
                      (o.take(j, std::get<I>(values)), ...);
                    }(std::index_sequence_for<O...>{});
                  },
                  local);
            }
          };
          if (dense) packets(std::true_type{});
          else packets(std::false_type{});
        }
        for (; j < block_end; ++j)
          apply_plain([&](auto&... o) {
            const auto values = std::tuple{o.value(j)...};
            [&]<std::size_t... I>(std::index_sequence<I...>) { (o.take(j, std::get<I>(values)), ...); }(
                std::index_sequence_for<O...>{});
          }, local);
        apply_plain([&](auto&... o) { (o.flush(), ...); }, local);
      }
      j = 0;
      cursor.next(f);
    }
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((partials[thread][I] = [&] {
         if constexpr (is_reduce_output_v<O>) return get<I>(local).total;
         else return T{};
       }()),
       ...);
    }(std::index_sequence_for<O...>{});
    used[thread] = true;
  });
  auto all = plain_tuple<O&...>{{{outputs}...}};
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          using Out = std::tuple_element_t<I, std::tuple<O...>>;
          if constexpr (is_reduce_output_v<Out>) {
            using Op = typename Out::op_type;
            T total = Op::template identity<T>();
            for (std::size_t t = 0; t < max_threads_supported; ++t)
              if (used[t]) total = Op::combine(total, partials[t][I]);
            get<I>(all).out[0] = Op::finish(total, get<I>(all).count);
          }
        }(),
        ...);
  }(std::index_sequence_for<O...>{});
}

// Evaluates several expressions with one context. Candidates for the one-pass group are the
// elementwise outputs and full reductions of the first candidate's dtype; they run together when
// their frames agree at run time, otherwise (and for every other output) one by one.
template <class... Ev>
struct one_pass_plan {
  static constexpr std::size_t n = sizeof...(Ev);
  static constexpr std::array<bool, n> candidate{
      (one_pass_candidate_v<Ev> && std::is_floating_point_v<typename Ev::value_type>)...};
  static constexpr std::size_t first = [] {
    for (std::size_t i = 0; i < n; ++i)
      if (candidate[i]) return i;
    return n;
  }();
  using group_type = std::conditional_t<(first < n),
                                        std::tuple_element_t<(first < n ? first : 0), std::tuple<typename Ev::value_type...>>,
                                        void>;
  static constexpr std::array<bool, n> in_group = [] {
    std::array<bool, n> g{};
    if constexpr (first < n) {
      constexpr std::array<bool, n> same{std::is_same_v<typename Ev::value_type, group_type>...};
      for (std::size_t i = 0; i < n; ++i) g[i] = candidate[i] && same[i];
    }
    return g;
  }();
  static constexpr std::size_t size = [] {
    std::size_t k = 0;
    for (bool b : in_group) k += b;
    return k;
  }();
  static constexpr std::array<std::size_t, size> members = [] {
    std::array<std::size_t, size> m{};
    for (std::size_t i = 0, k = 0; i < n; ++i)
      if (in_group[i]) m[k++] = i;
    return m;
  }();
};

template <class Ev>
frame loop_frame(const Ev& ev) {
  if constexpr (is_full_reduction_v<Ev>) return frame::of<std::remove_cvref_t<decltype(ev.operand)>::rank>(ev.operand.extents);
  else return frame::of<Ev::rank>(ev.extents);
}

inline bool same_frame(const frame& a, const frame& b) {
  if (a.rank != b.rank) return false;
  for (std::size_t i = 0; i < a.rank; ++i)
    if (a.extents[i] != b.extents[i]) return false;
  return true;
}

template <class T, class Ev, class Ctx>
auto one_pass_output(Ev& ev, Ctx& ctx, T* out) {
  if constexpr (is_full_reduction_v<Ev>) {
    ev.operand.prepare(ctx);
    ++counters().reductions;
    return reduce_output<T, typename Ev::Op, std::remove_cvref_t<decltype(ev.operand)>>{ev.operand, out, ev.reduced_count};
  } else {
    ev.prepare(ctx);
    return map_output<T, Ev>{ev, out};
  }
}

// An output that one output of a multi-output kernel is asks for it to be written into `out`
// (kernel_eval::want_at, eval/output_destination.hpp); any other evaluator is computed as usual.
template <class Ev, class Ctx, class T>
void want_at(Ev& ev, Ctx& ctx, T* out) {
  if constexpr (requires { ev.want_at(out, ctx); }) ev.want_at(out, ctx);
}

template <class... Ev, class Ctx, class... Out>
void compute_outputs(plain_tuple<Ev...>& evs, Ctx& ctx, std::tuple<Out...>& outs) {
  using plan = one_pass_plan<Ev...>;
  [&]<std::size_t... I>(std::index_sequence<I...>) {  // outputs computed by compute() below
    ((plan::size >= 2 && plan::in_group[I] ? void() : want_at(get<I>(evs), ctx, std::get<I>(outs).data())), ...);
  }(std::index_sequence_for<Ev...>{});
  bool grouped = false;
  if constexpr (plan::size >= 2) {
    using T = typename plan::group_type;
    grouped = [&]<std::size_t... K>(std::index_sequence<K...>) {
      const frame f = loop_frame(get<plan::members[0]>(evs));
      if (!(same_frame(f, loop_frame(get<plan::members[K]>(evs))) && ...)) return false;
      auto outputs = make_plain_tuple(one_pass_output<T>(get<plan::members[K]>(evs), ctx,
                                                         std::get<plan::members[K]>(outs).data())...);
      apply_plain([&](auto&... o) { run_one_pass<T>(f, o...); }, outputs);
      ++counters().fused_passes;
      return true;
    }(std::make_index_sequence<plan::size>{});
  }
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((grouped && plan::in_group[I] ? void() : void(compute(get<I>(evs), ctx, std::get<I>(outs).data()))), ...);
  }(std::index_sequence_for<Ev...>{});
}

}  // namespace symflow::cpu
