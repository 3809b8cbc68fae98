#pragma once
// cuda::eval: evaluates an expression on the GPU and returns a device tensor.
#include <symflow/expr/leaves.hpp>

#include "kernel_ops.hpp"

namespace symflow::cuda {

// Binds a named leaf to device memory for one evaluation: feed<"x">(dev) or feed(x, dev).
template <fixed_string Name, class T, class S>
auto feed(const device_view<T, S>& value) {
  using U = std::remove_const_t<T>;
  return device_feed<Name, U, S::rank>{
      device_view<const U, dyn_shape<S::rank>>(value.data(), value.extents(), value.strides())};
}
template <fixed_string Name, class T, class S>
auto feed(const device_tensor<T, S>& value) {
  return feed<Name>(value.view());
}

template <class Leaf, class V>
struct feed_matches_leaf
    : std::bool_constant<std::is_same_v<typename Leaf::value_type, typename V::value_type> && Leaf::rank == V::rank> {};

// feed(x, value): the leaf's name comes from its type. Device values are read in place; host tensors
// and views are uploaded during the evaluation (once, even if the leaf appears several times).
template <expression Leaf, class V>
  requires(Leaf::kind == node_kind::placeholder || Leaf::kind == node_kind::variable)
auto feed(const Leaf&, const V& value) {
  using bound = std::remove_cvref_t<V>;
  static_assert(is_device_tensor_v<bound> || is_device_view_v<bound> || is_tensor_v<bound> || is_tensor_view_v<bound>,
                "symflow: cuda::feed binds a leaf to a device_tensor, device_view, tensor or tensor_view");
  static_assert(feed_matches_leaf<Leaf, bound>::value,
                "symflow: the value fed to this placeholder or variable has the wrong dtype or rank (leaf below)");
  if constexpr (is_device_tensor_v<bound> || is_device_view_v<bound>) return feed<Leaf::name>(value);
  else return symflow::feed<Leaf::name>(value);
}

// Evaluates `expr` on the GPU: cuda::eval(loss, cuda::feed(x, images), cuda::feed(y, labels), store).
// Sources: device feeds, host feeds (x = tensor; uploaded), a params and/or cuda::device_params store
// for variables (device entries win), and cuda::options (stream, TF32). Every runtime extent is
// checked before any work is queued; the work is queued on the stream and the call returns without
// waiting (the result is ready once the stream reaches it). Elementwise chains, broadcasts and a
// final reduction run as one kernel; matmuls (cuBLAS), other kernel ops and inner reductions are
// materialised first, as on the CPU.
template <expression E, class... Sources>
device_tensor<value_type_of<E>, shape_of<E>> eval(const E& expr, const Sources&... sources) {
  detail::context<Sources...> ctx(sources...);
  auto ev = detail::make_evaluator(expr, ctx);
  device_tensor<value_type_of<E>, shape_of<E>> out(ev.extents, ctx.stream);
  detail::compute(ev, ctx, out.data());
  return out;
}

// As eval, writing into `out` and reusing its memory when its extents already match.
template <expression E, class... Sources>
void eval_into(device_tensor<value_type_of<E>, shape_of<E>>& out, const E& expr, const Sources&... sources) {
  detail::context<Sources...> ctx(sources...);
  auto ev = detail::make_evaluator(expr, ctx);
  if (out.extents() != ev.extents || (out.data() == nullptr && element_count<rank_of<E>>(ev.extents) != 0))
    out = device_tensor<value_type_of<E>, shape_of<E>>(ev.extents, ctx.stream);
  detail::compute(ev, ctx, out.data());
}

}  // namespace symflow::cuda
