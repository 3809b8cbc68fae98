#pragma once
// cuda::eval: evaluates an expression on the GPU and returns a device tensor.
#include <symflow/expr/leaves.hpp>

#include "conv_ops.hpp"
#include "loss_ops.hpp"
#include "pool_ops.hpp"
#include "gemm_epilogue.hpp"
#include "kernel_ops.hpp"
#include "multi_output.hpp"
#include "nonfinite.hpp"

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

namespace detail {

template <class... A>
constexpr std::size_t leading_expressions() {
  constexpr bool is_expr[] = {expression<A>..., false};
  std::size_t n = 0;
  while (n < sizeof...(A) && is_expr[n]) ++n;
  return n;
}

template <class T>
inline constexpr bool is_std_tuple_v = false;
template <class... T>
inline constexpr bool is_std_tuple_v<std::tuple<T...>> = true;

template <class Out>
struct output_traits {
  static constexpr bool supported = false;
};
template <class T, class S>
struct output_traits<device_tensor<T, S>> {
  static constexpr bool supported = true;
  using value_type = T;
  using shape_type = S;
};
template <class T, class S>
struct output_traits<device_view<T, S>> {
  static constexpr bool supported = !std::is_const_v<T>;
  using value_type = std::remove_const_t<T>;
  using shape_type = S;
};

// Where expression E's result goes: a device tensor (reallocated on the evaluation's stream when its
// extents differ) or a dense device view of the right extents (a parameter's own memory).
template <class E, class Out, class Ev>
void* output_memory_for(Out& out, const Ev& ev, cudaStream_t stream) {
  using O = std::remove_cvref_t<Out>;
  static_assert(output_traits<O>::supported,
                "symflow: cuda::eval_into writes into a device_tensor or a (non-const) device_view");
  static_assert(std::is_same_v<typename output_traits<O>::value_type, value_type_of<E>>,
                "symflow: an output's dtype does not match its expression");
  static_assert(output_traits<O>::shape_type::rank == rank_of<E>, "symflow: an output's rank does not match its expression");
  if constexpr (is_device_tensor_v<O>) {
    static_assert(std::is_same_v<O, device_tensor<value_type_of<E>, shape_of<E>>>,
                  "symflow: an output tensor's shape type does not match its expression");
    if (out.extents() != ev.extents || (out.data() == nullptr && element_count<rank_of<E>>(ev.extents) != 0))
      out = O(ev.extents, stream);
    return out.data();
  } else {
    if (out.extents() != ev.extents)
      throw shape_error("symflow::cuda::eval_into: the output view has extents " + format_extents(out.extents()) +
                        " but the expression's result has " + format_extents(ev.extents));
    if (!out.is_contiguous())
      throw shape_error("symflow::cuda::eval_into: the output view must be dense (row-major, contiguous)");
    return out.data();
  }
}

}  // namespace detail

// Evaluates `expr` on the GPU: cuda::eval(loss, cuda::feed(x, images), cuda::feed(y, labels), store).
// Sources: device feeds, host feeds (x = tensor; uploaded), a params and/or cuda::device_params store
// for variables (device entries win), and cuda::options (stream, TF32). Every runtime extent is
// checked before any work is queued; the work is queued on the stream and the call returns without
// waiting (the result is ready once the stream reaches it). Elementwise chains, broadcasts and a
// final reduction run as one kernel; matmuls (cuBLAS), other kernel ops and inner reductions are
// materialised first, as on the CPU, and a value the expression needs twice is computed once.
template <expression E, class... Sources>
  requires(!expression<Sources> && ...)
device_tensor<value_type_of<E>, shape_of<E>> eval(const E& expr, const Sources&... sources) {
  detail::context<Sources...> ctx(sources...);
  auto evs = std::tuple{detail::make_root_evaluator(expr, ctx)};
  device_tensor<value_type_of<E>, shape_of<E>> out(std::get<0>(evs).extents, ctx.stream);
  if (!detail::compute_outputs<std::tuple<E>>(evs, ctx, {static_cast<void*>(out.data())}))
    detail::report_nonfinite_on_device(tie_plain(expr), ctx.stream, sources...);
  return out;
}

// As eval, writing into `out`: a device_tensor (its memory reused when its extents already match) or
// a dense device_view of the result's extents. `out` may be the memory of an input the expression
// reads at the same index (W - lr * dW into W's own memory); when it is read otherwise (broadcast,
// transposed, by a reduction) the result goes through scratch memory first.
template <class Out, expression E, class... Sources>
  requires(!detail::is_std_tuple_v<std::remove_cvref_t<Out>> && (!expression<Sources> && ...))
void eval_into(Out&& out, const E& expr, const Sources&... sources) {
  detail::context<Sources...> ctx(sources...);
  auto evs = std::tuple{detail::make_root_evaluator(expr, ctx)};
  void* memory = detail::output_memory_for<E>(out, std::get<0>(evs), ctx.stream);
  if (!detail::compute_outputs<std::tuple<E>>(evs, ctx, {memory}))
    detail::report_nonfinite_on_device(tie_plain(expr), ctx.stream, sources...);
}

// Several outputs in one evaluation: eval_into(std::tie(L, dW, db), loss, dW_expr, db_expr, sources...).
// Outputs are device tensors or dense device views (std::tie or a tuple of views). Work the
// expressions share runs once, elementwise outputs and full reductions over one frame run as one
// kernel, and outputs may overwrite inputs (a training step updating its parameters in place: every
// gradient is computed before any parameter is written).
template <class... Out, expression E1, class... Rest>
void eval_into(std::tuple<Out...> outs, const E1& e1, const Rest&... rest) {
  constexpr std::size_t k = 1 + detail::leading_expressions<Rest...>();
  static_assert(k == sizeof...(Out), "symflow: cuda::eval_into needs one output per expression");
  const auto args = tie_plain(e1, rest...);
  using all = std::tuple<E1, Rest...>;
  [&]<std::size_t... X, std::size_t... S>(std::index_sequence<X...>, std::index_sequence<S...>) {
    using exprs = std::tuple<std::remove_cvref_t<std::tuple_element_t<X, all>>...>;
    detail::context<std::remove_cvref_t<std::tuple_element_t<k + S, all>>...> ctx(get<k + S>(args)...);
    auto evs = std::tuple{detail::make_root_evaluator(get<X>(args), ctx)...};
    const std::array<void*, k> memory{
        detail::output_memory_for<std::tuple_element_t<X, exprs>>(std::get<X>(outs), std::get<X>(evs), ctx.stream)...};
    if (!detail::compute_outputs<exprs>(evs, ctx, memory))
      detail::report_nonfinite_on_device(tie_plain(get<X>(args)...), ctx.stream, get<k + S>(args)...);
  }(std::make_index_sequence<k>{}, std::make_index_sequence<sizeof...(Rest) + 1 - k>{});
}

// eval(loss, dW, db, sources...): several outputs in one evaluation, returned as a tuple of device
// tensors (see eval_into above).
template <expression E1, expression E2, class... Rest>
auto eval(const E1& e1, const E2& e2, const Rest&... rest) {
  constexpr std::size_t k = 2 + detail::leading_expressions<Rest...>();
  const auto args = tie_plain(e1, e2, rest...);
  using all = std::tuple<E1, E2, Rest...>;
  return [&]<std::size_t... X, std::size_t... S>(std::index_sequence<X...>, std::index_sequence<S...>) {
    using exprs = std::tuple<std::remove_cvref_t<std::tuple_element_t<X, all>>...>;
    detail::context<std::remove_cvref_t<std::tuple_element_t<k + S, all>>...> ctx(get<k + S>(args)...);
    auto evs = std::tuple{detail::make_root_evaluator(get<X>(args), ctx)...};
    auto outs = std::tuple{device_tensor<value_type_of<std::tuple_element_t<X, exprs>>, shape_of<std::tuple_element_t<X, exprs>>>(
        std::get<X>(evs).extents, ctx.stream)...};
    if (!detail::compute_outputs<exprs>(evs, ctx, {static_cast<void*>(std::get<X>(outs).data())...}))
      detail::report_nonfinite_on_device(tie_plain(get<X>(args)...), ctx.stream, get<k + S>(args)...);
    return outs;
  }(std::make_index_sequence<k>{}, std::make_index_sequence<sizeof...(Rest) + 2 - k>{});
}

// The fusion group that `expr`'s own kernel would run, as the placement log prints it
// ("dense1/relu(dense1/add([dense1/matmul], b1))"). Builds the evaluator only (host feeds are not
// uploaded, nothing runs), so it works without a GPU.
template <expression E, class... Sources>
std::string root_group_description(const E& expr, const Sources&... sources) {
  detail::context<Sources...> ctx(sources...);
  const auto ev = detail::make_evaluator(expr, ctx);
  if constexpr (E::kind == node_kind::reduction)
    return ev.source.text() + "(" + detail::describe_group(ev.operand) + ")";
  else if constexpr (E::kind == node_kind::kernel)
    return ev.source.text() + "(" + ev.operand_list() + ")";
  else
    return detail::describe_group(ev);
}

// How the root of `expr` runs, as the profile names it: for act(matmul(a, b) + bias) that becomes one
// cuBLASLt GEMM with an epilogue, "cuBLASLt GEMM + bias + relu epilogue (FP32): dense1/relu(dense1/add(
// dense1/matmul(x, W), b)) -> f32[2,4]"; otherwise root_group_description's text. Decided from what
// the host knows (pattern, dtype, options, extents), without a GPU; at run time the root can still
// fall back to GEMM + map when cuBLASLt offers no algorithm for the operands' layouts and alignments,
// or when another output of the same evaluation computes the plain product anyway.
template <expression E, class... Sources>
std::string root_placement_description(const E& expr, const Sources&... sources) {
  detail::context<Sources...> ctx(sources...);
  const auto ev = detail::make_root_evaluator(expr, ctx);
  if constexpr (detail::is_gemm_epilogue_eval_v<std::remove_cvref_t<decltype(ev)>>) {
    if (ev.expected()) return ev.description(ctx.allow_tf32);
  }
  return root_group_description(expr, sources...);
}

}  // namespace symflow::cuda
