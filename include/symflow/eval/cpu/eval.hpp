#pragma once
#include "../../core/tensor.hpp"
#include "evaluators.hpp"

namespace symflow {

namespace cpu {
template <class Ev, class Ctx, class T>
void compute(Ev& ev, Ctx& ctx, T* out) {
  if constexpr (requires { ev.compute_into(out, ctx); }) {
    ev.compute_into(out, ctx);
  } else {
    ev.prepare(ctx);
    run_map<T>(ev, frame::of<Ev::rank>(ev.extents), out);
  }
}
}  // namespace cpu

// Evaluates an expression on the CPU: eval(loss, x = images, y = labels, parameters). All runtime
// extents are checked before any work; elementwise chains, broadcasts and a final reduction run
// as one fused pass; the only allocation is the result (plus materialised matmuls and inner
// reductions, when the expression has them).
template <expression E, class... Sources>
tensor<value_type_of<E>, shape_of<E>> eval(const E& expr, const Sources&... sources) {
  cpu::eval_context<Sources...> ctx(sources...);
  auto ev = cpu::make_evaluator(expr, ctx);
  tensor<value_type_of<E>, shape_of<E>> out(ev.extents, uninitialized);
  cpu::compute(ev, ctx, out.data());
  return out;
}

// As eval, writing into `out` and reusing its memory when the extents already match (first
// touching fresh memory is expensive; a training loop should reuse its buffers).
template <expression E, class... Sources>
void eval_into(tensor<value_type_of<E>, shape_of<E>>& out, const E& expr, const Sources&... sources) {
  cpu::eval_context<Sources...> ctx(sources...);
  auto ev = cpu::make_evaluator(expr, ctx);
  if (out.extents() != ev.extents || out.data() == nullptr)
    out = tensor<value_type_of<E>, shape_of<E>>(ev.extents, uninitialized);
  cpu::compute(ev, ctx, out.data());
}

}  // namespace symflow
