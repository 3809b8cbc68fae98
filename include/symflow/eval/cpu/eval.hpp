#pragma once
#include <cstring>
#include <utility>
#include <vector>

#include "../../core/tensor.hpp"
#include "compiled_placement.hpp"
#include "../nonfinite_report.hpp"
#include "../program_route.hpp"
#include "evaluators.hpp"
#include "multi_output.hpp"
#include "row_blocks.hpp"

namespace symflow {

namespace cpu {
// Computes one output; returns false when check_numerics is on and the output holds NaN or
// infinities (checked inside the fused pass, or by a scan of what other paths wrote).
template <class Ev, class Ctx, class T>
bool compute(Ev& ev, Ctx& ctx, T* out) {
  bool finite = true;  // what a fused pass saw; other paths' outputs are scanned
  bool done = false;
  if constexpr (row_blocks::worth_trying<Ev>) done = row_blocks::compute(ev, ctx, out, finite);
  if constexpr (requires { ev.compute_into(out, ctx); }) {
    if (!done) ev.compute_into(out, ctx);
    return !check_numerics_enabled() || all_finite(dtype_v<T>, out, element_count<Ev::rank>(ev.extents));
  } else {
    if (!done) {
      ev.prepare(ctx);
      finite = run_map<T>(ev, frame::of<Ev::rank>(ev.extents), out);
      ++counters().fused_passes;
    }
    return finite || !check_numerics_enabled();
  }
}
template <class Outs>
bool outputs_finite(const Outs& outs) {
  if (!check_numerics_enabled()) return true;
  return std::apply([](const auto&... o) { return (all_finite(dtype_v<typename std::remove_cvref_t<decltype(o)>::value_type>,
                                                              o.data(), o.size()) && ...); },
                    outs);
}
template <class Outs>
std::vector<symflow::detail::nonfinite_output> nonfinite_outputs(const Outs& outs) {
  return std::apply([](const auto&... o) { return symflow::detail::nonfinite_outputs(o...); }, outs);
}
// A checked result computed aside becomes the caller's: copied into its memory when that has the
// right extents (views of it stay valid, as without checking), else moved in.
template <class Tensor>
void adopt_result(Tensor& out, Tensor&& fresh) {
  if (out.data() != nullptr && out.extents() == fresh.extents()) {
    if (fresh.size()) std::memcpy(out.data(), fresh.data(), fresh.size() * sizeof(typename Tensor::value_type));
  } else {
    out = std::move(fresh);
  }
}

// Where an evaluation keeps its evaluators: in place, or, past 16 KB, in heap memory. A deep
// model's evaluator tree, many outputs' even more so, runs to hundreds of kilobytes, which must not
// sit in one stack frame (evaluation runs with a 1 MB stack); anything smaller stays where it is, so
// an evaluation still allocates nothing but its results. Built from `make`, which returns the
// evaluator as a prvalue: it is constructed in its place, never moved. (A plain owner rather than
// std::unique_ptr: unique_ptr keeps its pointer in a std::tuple, whose constructors g++ resolves in
// time exponential in the depth of the evaluator types; see core/plain_tuple.hpp.)
inline constexpr std::size_t evaluator_stack_limit = 16 * 1024;
template <class T, bool OnHeap = (sizeof(T) > evaluator_stack_limit)>
class evaluator_home {
 public:
  template <class Make>
  explicit evaluator_home(Make&& make) : value_(make()) {}
  evaluator_home(const evaluator_home&) = delete;
  evaluator_home& operator=(const evaluator_home&) = delete;
  T& operator*() noexcept { return value_; }

 private:
  T value_;
};
template <class T>
class evaluator_home<T, true> {
 public:
  template <class Make>
  explicit evaluator_home(Make&& make) : p_(new T(make())) {}
  evaluator_home(const evaluator_home&) = delete;
  evaluator_home& operator=(const evaluator_home&) = delete;
  ~evaluator_home() { delete p_; }
  T& operator*() noexcept { return *p_; }

 private:
  T* p_;
};
// The evaluator of one expression.
template <class Make>
auto evaluator_in_place(Make&& make) {
  return evaluator_home<decltype(make())>(make);
}
// The evaluators of expressions X... of `args`, as one plain_tuple.
template <std::size_t... X, class Args, class Ctx>
auto evaluators_in_place(std::index_sequence<X...>, const Args& args, Ctx& ctx) {
  using T = plain_tuple<decltype(make_evaluator(get<X>(args), ctx))...>;
  return evaluator_home<T>([&] { return T{{{make_evaluator(get<X>(args), ctx)}...}}; });
}
}  // namespace cpu

// Evaluates an expression on the CPU: eval(loss, x = images, y = labels, parameters). All runtime
// extents are checked before any work; elementwise chains, broadcasts and a final reduction run
// as one fused pass; the only allocation is the result (plus materialised matmuls and inner
// reductions, when the expression has them).
template <expression E, class... Sources>
tensor<value_type_of<E>, shape_of<E>> eval(const E& expr, const Sources&... sources) {
  if constexpr (detail::evaluated_by_program<E>::value) {
    return eval(detail::evaluated_by_program<E>::rewrite(expr), sources...);
  } else {
    detail::log_compiled_placement(tie_plain(expr));
    cpu::outputs_context<std::tuple<E>, Sources...> ctx(sources...);
    auto ev_memory = cpu::evaluator_in_place([&] { return cpu::make_evaluator(expr, ctx); });
    auto& ev = *ev_memory;
    tensor<value_type_of<E>, shape_of<E>> out(ev.extents, uninitialized);
    cpu::want_at(ev, ctx, out.data());
    if (!cpu::compute(ev, ctx, out.data())) detail::report_nonfinite(tie_plain(expr), detail::nonfinite_outputs(out), sources...);
    return out;
  }
}

// As eval, writing into `out` and reusing its memory when the extents already match (first
// touching fresh memory is expensive; a training loop should reuse its buffers). With check_numerics
// on, the result is computed aside and `out` is left as it was when the evaluation throws: a caller
// that catches numerics_error still holds its last good values.
template <expression E, class... Sources>
void eval_into(tensor<value_type_of<E>, shape_of<E>>& out, const E& expr, const Sources&... sources) {
  if constexpr (detail::evaluated_by_program<E>::value) {
    eval_into(out, detail::evaluated_by_program<E>::rewrite(expr), sources...);
  } else {
    using result = tensor<value_type_of<E>, shape_of<E>>;
    detail::log_compiled_placement(tie_plain(expr));
    cpu::outputs_context<std::tuple<E>, Sources...> ctx(sources...);
    auto ev_memory = cpu::evaluator_in_place([&] { return cpu::make_evaluator(expr, ctx); });
    auto& ev = *ev_memory;
    if (check_numerics_enabled()) {
      result fresh(ev.extents, uninitialized);
      cpu::want_at(ev, ctx, fresh.data());
      if (!cpu::compute(ev, ctx, fresh.data()))
        detail::report_nonfinite(tie_plain(expr), detail::nonfinite_outputs(fresh), sources...);
      cpu::adopt_result(out, std::move(fresh));
      return;
    }
    if (out.extents() != ev.extents || out.data() == nullptr) out = result(ev.extents, uninitialized);
    cpu::want_at(ev, ctx, out.data());
    cpu::compute(ev, ctx, out.data());
  }
}

namespace detail {
template <class... A>
constexpr std::size_t leading_expressions() {
  constexpr bool is_expr[] = {expression<A>..., false};
  std::size_t n = 0;
  while (n < sizeof...(A) && is_expr[n]) ++n;
  return n;
}
}  // namespace detail

// eval_into(std::tie(L, dW, db), loss, dW_expr, db_expr, feeds...): several outputs into reused
// tensors (each reallocated only when its extents change).
template <class... Out, expression E1, class... Rest>
void eval_into(std::tuple<Out&...> outs, const E1& e1, const Rest&... rest) {
  constexpr std::size_t k = 1 + detail::leading_expressions<Rest...>();
  static_assert(k == sizeof...(Out), "symflow: eval_into needs one output tensor per expression");
  const auto args = tie_plain(e1, rest...);  // not std::tie: see core/plain_tuple.hpp
  using all = std::tuple<E1, Rest...>;
  [&]<std::size_t... X, std::size_t... S>(std::index_sequence<X...>, std::index_sequence<S...>) {
    detail::log_compiled_placement(tie_plain(get<X>(args)...));
    cpu::outputs_context<std::tuple<std::remove_cvref_t<std::tuple_element_t<X, all>>...>,
                        std::remove_cvref_t<std::tuple_element_t<k + S, all>>...>
        ctx(get<k + S>(args)...);
    auto evs_memory = cpu::evaluators_in_place(std::index_sequence<X...>{}, args, ctx);
    auto& evs = *evs_memory;
    static_assert((std::is_same_v<std::remove_cvref_t<Out>, tensor<value_type_of<std::tuple_element_t<X, all>>,
                                                                   shape_of<std::tuple_element_t<X, all>>>> && ...),
                  "symflow: an output tensor's dtype or shape type does not match its expression");
    if (check_numerics_enabled()) {
      // Computed aside, moved into the caller's tensors only when every output is finite.
      std::tuple<std::remove_cvref_t<Out>...> fresh{std::remove_cvref_t<Out>(get<X>(evs).extents, uninitialized)...};
      auto fresh_refs = std::tie(std::get<X>(fresh)...);
      cpu::compute_outputs(evs, ctx, fresh_refs);
      if (!cpu::outputs_finite(fresh_refs))
        detail::report_nonfinite(tie_plain(get<X>(args)...), cpu::nonfinite_outputs(fresh_refs), get<k + S>(args)...);
      (cpu::adopt_result(std::get<X>(outs), std::move(std::get<X>(fresh))), ...);
      return;
    }
    (
        [&] {
          auto& out = std::get<X>(outs);
          if (out.extents() != get<X>(evs).extents || out.data() == nullptr)
            out = std::remove_cvref_t<decltype(out)>(get<X>(evs).extents, uninitialized);
        }(),
        ...);
    cpu::compute_outputs(evs, ctx, outs);
  }(std::make_index_sequence<k>{}, std::make_index_sequence<sizeof...(Rest) + 1 - k>{});
}

// eval(loss, dW, db, feeds...): several outputs in one evaluation, returned as a tuple. Work they
// share is done once; elementwise outputs and full reductions over the same frame run in one pass.
template <expression E1, expression E2, class... Rest>
auto eval(const E1& e1, const E2& e2, const Rest&... rest) {
  constexpr std::size_t k = detail::leading_expressions<Rest...>();
  const auto args = tie_plain(e1, e2, rest...);
  return [&]<std::size_t... X, std::size_t... S>(std::index_sequence<X...>, std::index_sequence<S...>) {
    using all = std::tuple<E1, E2, Rest...>;
    detail::log_compiled_placement(tie_plain(get<X>(args)...));
    cpu::outputs_context<std::tuple<std::remove_cvref_t<std::tuple_element_t<X, all>>...>,
                        std::remove_cvref_t<std::tuple_element_t<2 + k + S, all>>...>
        ctx(get<2 + k + S>(args)...);
    auto evs_memory = cpu::evaluators_in_place(std::index_sequence<X...>{}, args, ctx);
    auto& evs = *evs_memory;
    auto outs = std::tuple{tensor<value_type_of<std::tuple_element_t<X, std::tuple<E1, E2, Rest...>>>,
                                  shape_of<std::tuple_element_t<X, std::tuple<E1, E2, Rest...>>>>(
        get<X>(evs).extents, uninitialized)...};
    cpu::compute_outputs(evs, ctx, outs);
    if (!cpu::outputs_finite(outs))
      detail::report_nonfinite(tie_plain(get<X>(args)...), cpu::nonfinite_outputs(outs), get<2 + k + S>(args)...);
    return outs;
  }(std::make_index_sequence<2 + k>{}, std::make_index_sequence<sizeof...(Rest) - k>{});
}

}  // namespace symflow
