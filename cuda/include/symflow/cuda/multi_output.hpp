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

#include <symflow/debug/numerics.hpp>
#include <symflow/expr/reduction.hpp>

#include "fusion_groups.hpp"

namespace symflow::cuda {
namespace detail {

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

// The frame an output would loop over in a one-pass group, as a static shape: a full reduction's
// operand, anything else's own shape.
template <class E>
struct static_frame {
  using type = shape_of<E>;
};
template <class Op, class A, unsigned Bits, bool Keep>
struct static_frame<reduction<Op, A, Bits, Keep>> {
  using type = shape_of<A>;
};
// Whether two static shapes could describe the same frame at run time (dyn matches anything).
template <class S1, class S2>
constexpr bool frames_may_agree() {
  constexpr std::size_t r1 = S1::rank == 0 ? 1 : S1::rank, r2 = S2::rank == 0 ? 1 : S2::rank;
  if constexpr (r1 != r2) {
    return false;
  } else if constexpr (S1::rank == 0 || S2::rank == 0) {
    return true;
  } else {
    for (std::size_t i = 0; i < S1::rank; ++i) {
      const std::size_t a = S1::extents[i], b = S2::extents[i];
      if (a != dyn && b != dyn && a != b) return false;
    }
    return true;
  }
}

// The outputs that run as one pass: elementwise outputs and full reductions of the first such
// output's (floating-point) dtype, whose static shapes allow the same frame. Whether the frames
// agree is known only at run time.
template <class Exprs, class... Ev>
struct one_pass_plan;
template <class... E, class... Ev>
struct one_pass_plan<std::tuple<E...>, Ev...> {
  static constexpr std::size_t n = sizeof...(Ev);
  static constexpr std::array<bool, n> candidate{
      ((is_full_reduction_v<Ev> || is_elementwise_eval_v<Ev>) && std::is_floating_point_v<typename Ev::value_type>)...};
  static constexpr std::size_t first = [] {
    for (std::size_t i = 0; i < n; ++i)
      if (candidate[i]) return i;
    return n;
  }();
  using group_type =
      std::conditional_t<(first < n), std::tuple_element_t<(first < n ? first : 0), std::tuple<typename Ev::value_type...>>,
                         void>;
  using first_frame = typename static_frame<std::tuple_element_t<(first < n ? first : 0), std::tuple<E...>>>::type;
  static constexpr std::array<bool, n> in_group = [] {
    std::array<bool, n> g{};
    if constexpr (first < n) {
      constexpr std::array<bool, n> same{
          (std::is_same_v<typename Ev::value_type, group_type> &&
           frames_may_agree<first_frame, typename static_frame<E>::type>())...};
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

// The frame a one-pass member runs over: a map's result, a full reduction's operand.
template <class Ev>
group_frame loop_frame(const Ev& ev) {
  if constexpr (is_full_reduction_v<Ev>) return frame_of<std::remove_cvref_t<decltype(ev.operand)>::rank>(ev.operand.extents);
  else return frame_of<Ev::rank>(ev.extents);
}
inline bool same_frame(const group_frame& a, const group_frame& b) {
  if (a.rank != b.rank) return false;
  for (std::size_t i = 0; i < a.rank; ++i)
    if (a.extents[i] != b.extents[i]) return false;
  return true;
}

template <class Ev>
auto& one_pass_operand(Ev& ev) {
  if constexpr (is_full_reduction_v<Ev>) return ev.operand;
  else return ev;
}

template <class... Ops>
struct op_list {};
// The reduction op of each full reduction among the members, in member order.
template <class Ev>
struct reduce_op_of {
  using type = op_list<>;
};
template <class Node, class C>
struct reduce_op_of<reduction_eval<Node, C>> {
  using type = op_list<dev::canonical_t<typename Node::op_type>>;
};
template <class... Lists>
struct concat_ops {
  using type = op_list<>;
};
template <class... A>
struct concat_ops<op_list<A...>> {
  using type = op_list<A...>;
};
template <class... A, class... B, class... Rest>
struct concat_ops<op_list<A...>, op_list<B...>, Rest...> {
  using type = typename concat_ops<op_list<A..., B...>, Rest...>::type;
};
template <class... Ev>
using reduce_ops_t = typename concat_ops<typename reduce_op_of<Ev>::type...>::type;

// Blocks of dev::block_threads threads one SM holds at once for `kernel` (cached per kernel and
// device; at least 1).
inline int resident_blocks_per_sm(const void* kernel) {
  struct entry {
    const void* kernel;
    int device;
    int blocks;
  };
  static thread_local std::vector<entry> cache;
  int device = 0;
  SYMFLOW_CUDA_CHECK(cudaGetDevice(&device));
  for (const entry& e : cache)
    if (e.kernel == kernel && e.device == device) return e.blocks;
  int blocks = 0;
  SYMFLOW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, dev::block_threads, 0));
  cache.push_back({kernel, device, std::max(blocks, 1)});
  return cache.back().blocks;
}

template <class T, int R, bool Check, class... Ops>
void launch_one_pass_finish(op_list<Ops...>, const T* partials, int blocks, const dev::reduce_targets<T, R>& targets,
                            cudaStream_t s, unsigned* flag) {
  dev::one_pass_finish_kernel<dev::canonical_t<T>, R, Check, Ops...><<<unsigned(R), dev::block_threads, 0, s>>>(
      partials, blocks, targets, flag);
  SYMFLOW_CUDA_CHECK_LAUNCH("one_pass_finish_kernel");
}

template <class Ev>
std::string one_pass_member_text(const Ev& ev) {
  if constexpr (is_full_reduction_v<Ev>) return ev.source.text() + "(" + describe_group(ev.operand) + ")";
  else return describe_group(ev);
}

// Runs the members (elementwise outputs and full reductions over frame `f`) as one kernel writing
// `outs[k]` for member k (dense), plus one kernel finishing the reductions. (Members come as a tuple:
// nvcc mis-expands a parameter pack captured by nested lambdas.) Check: the kernels also set *flag
// when a value they write is NaN or infinite (check_numerics).
template <bool Check, class T, class Ctx, class... Ev>
void run_one_pass(Ctx& ctx, group_frame f, const std::array<T*, sizeof...(Ev)>& outs, std::tuple<Ev&...> evs,
                  unsigned* flag) {
  constexpr int R = (int(is_full_reduction_v<Ev>) + ... + 0);
  constexpr int FR = std::max({1, int(std::remove_cvref_t<decltype(one_pass_operand(std::declval<Ev&>()))>::rank)...});
  const cudaStream_t s = ctx.stream;
  const std::size_t n = f.size();
  auto each = [&](auto&& fn) {
    [&]<std::size_t... K>(std::index_sequence<K...>) { (fn(std::integral_constant<std::size_t, K>{}, std::get<K>(evs)), ...); }(
        std::index_sequence_for<Ev...>{});
  };
  if (n == 0) {
    each([&](auto k, auto& ev) {
      using E = std::remove_cvref_t<decltype(ev)>;
      if constexpr (is_full_reduction_v<E>) {
        dev::fill(outs[k], 1, T(E::Op::finish(E::Op::template identity<T>(), ev.reduced_count)), s);
        if constexpr (Check) dev::scan_nonfinite(outs[k], 1, flag, s);
      }
    });
    return;
  }
  std::array<frame_strides, sizeof...(Ev)> out_strides{};
  std::vector<frame_strides*> arrays;
  std::vector<leaf_record> leaves;
  std::vector<std::size_t> leaf_array;  // index into `arrays` of each leaf
  each([&](auto k, auto& ev) {
    using E = std::remove_cvref_t<decltype(ev)>;
    auto& operand = one_pass_operand(ev);
    operand.bind(f);
    if constexpr (!is_full_reduction_v<E>) {
      for (std::size_t a = f.rank, acc = 1; a-- > 0;) {
        out_strides[k][a] = acc;
        acc *= f.extents[a];
      }
      arrays.push_back(&out_strides[k]);
    }
    operand.visit([&](frame_strides& st, const void* data, std::size_t size, bool scalar) {
      if (scalar) return;
      leaf_array.push_back(arrays.size());
      arrays.push_back(&st);
      leaves.push_back({data, size});
    });
  });
  collapse(f, arrays.data(), arrays.size());

  constexpr int V = dev::vector_width;
  auto aligned = [](const void* p, std::size_t size) {
    const std::size_t need = std::min<std::size_t>(16, size * V);
    return reinterpret_cast<std::uintptr_t>(p) % need == 0;
  };
  bool dense = f.rank == 1;
  each([&](auto k, auto& ev) {
    if constexpr (!is_full_reduction_v<std::remove_cvref_t<decltype(ev)>>) dense = dense && aligned(outs[k], sizeof(T));
  });
  for (std::size_t k = 0; k < leaves.size() && dense; ++k)
    dense = (*arrays[leaf_array[k]])[0] == 1 && aligned(leaves[k].data, leaves[k].element_size);

  using U = dev::canonical_t<T>;
  // One table for all members: a leaf the loss and its gradients all read is loaded once.
  using keys = merged_keys_t<std::remove_cvref_t<decltype(one_pass_operand(std::declval<Ev&>()))>...>;
  using env_t = dev::leaf_table<keys::size, FR>;
  env_t env{};
  each([&](auto, auto& ev) { one_pass_operand(ev).template fill_table<keys>(env); });
  auto lower_member = [&](auto k, auto& ev) {
    using E = std::remove_cvref_t<decltype(ev)>;
    const auto d = one_pass_operand(ev).template lower<FR, keys>();
    using ev_t = dev::canonical_t<std::remove_const_t<decltype(d)>>;
    if constexpr (is_full_reduction_v<E>) return dev::reduce_member<dev::canonical_t<typename E::Op>, ev_t>{d};
    else return dev::map_member<ev_t, U>{d, outs[k]};
  };
  const auto members = [&]<std::size_t... K>(std::index_sequence<K...>) {
    return dev::make_pack(lower_member(std::integral_constant<std::size_t, K>{}, std::get<K>(evs))...);
  }(std::index_sequence_for<Ev...>{});

  const std::size_t items = dense ? (n + V - 1) / V : n;
  // As many blocks as the GPU holds at once for this kernel (its registers decide): one wave. A
  // fixed 8 blocks per SM would run a kernel that fits 6 in 1.33 waves, the last third alone.
  const void* kernel = [&]<class... M>(const dev::pack<M...>&) -> const void* {
    if (dense) return reinterpret_cast<const void*>(&dev::one_pass_dense_kernel<U, env_t, V, R, Check, M...>);
    if (n <= std::size_t(UINT32_MAX))
      return reinterpret_cast<const void*>(&dev::one_pass_strided_kernel<U, env_t, std::uint32_t, FR, R, Check, M...>);
    return reinterpret_cast<const void*>(&dev::one_pass_strided_kernel<U, env_t, std::uint64_t, FR, R, Check, M...>);
  }(members);
  const std::size_t resident = std::size_t(sm_count()) * std::size_t(resident_blocks_per_sm(kernel));
  const unsigned blocks =
      unsigned(std::max<std::size_t>(1, std::min((items + dev::block_threads - 1) / dev::block_threads, resident)));
  T* partials = R > 0 ? ctx.template allocate<T>(std::size_t(R) * blocks) : nullptr;
  dev::reduce_slots<U, R> identity{};
  dev::reduce_targets<U, R> targets{};
  {
    int slot = 0;
    each([&](auto k, auto& ev) {
      using E = std::remove_cvref_t<decltype(ev)>;
      if constexpr (is_full_reduction_v<E>) {
        identity.v[slot] = E::Op::template identity<T>();
        targets.out[slot] = outs[k];
        targets.count[slot] = ev.reduced_count;
        targets.identity[slot] = identity.v[slot];
        ++slot;
      }
    });
  }
  // The group as the placement log and the profile name it, after their own prefixes.
  const auto group_text = [&](std::string text) {
    text += std::to_string(sizeof...(Ev)) + " outputs over " + std::string(dtype_name(dtype_v<T>)) + "[";
    for (std::size_t a = 0; a < f.rank; ++a) {
      if (a) text += ',';
      text += std::to_string(f.extents[a]);
    }
    text += "]";
    each([&](auto k, auto& ev) { text += std::string("; #") + std::to_string(k.value + 1) + " " + one_pass_member_text(ev); });
    return text;
  };
  const char* kernel_name = dense ? "one_pass_dense_kernel" : "one_pass_strided_kernel";
  place([&] {
    return group_text(std::string(kernel_name) + ", " + launch_shape(blocks, dev::block_threads) + ", on " + current_device_name() + ": ");
  });
  const profile_region timed(s, [&] {
    return group_text(std::string(kernel_name) + (R > 0 ? " + one_pass_finish_kernel" : "") + (Check ? " (checked)" : "") + ": ");
  });
  [&]<class... M>(const dev::pack<M...>& m) {
    if (dense) {
      dev::one_pass_dense_kernel<U, env_t, V, R, Check, M...>
          <<<blocks, dev::block_threads, 0, s>>>(m, env, n, partials, identity, flag);
      SYMFLOW_CUDA_CHECK_LAUNCH("one_pass_dense_kernel");
    } else if (n <= std::size_t(UINT32_MAX)) {
      dev::index_frame<std::uint32_t> fi{int(f.rank), {}};
      for (int a = 0; a < int(f.rank); ++a) fi.extents[a] = std::uint32_t(f.extents[a]);
      dev::one_pass_strided_kernel<U, env_t, std::uint32_t, FR, R, Check, M...>
          <<<blocks, dev::block_threads, 0, s>>>(m, env, fi, n, partials, identity, flag);
      SYMFLOW_CUDA_CHECK_LAUNCH("one_pass_strided_kernel");
    } else {
      dev::index_frame<std::uint64_t> fi{int(f.rank), {}};
      for (int a = 0; a < int(f.rank); ++a) fi.extents[a] = f.extents[a];
      dev::one_pass_strided_kernel<U, env_t, std::uint64_t, FR, R, Check, M...>
          <<<blocks, dev::block_threads, 0, s>>>(m, env, fi, n, partials, identity, flag);
      SYMFLOW_CUDA_CHECK_LAUNCH("one_pass_strided_kernel");
    }
  }(members);
  if constexpr (R > 0) {
    place([&] {
      std::string text = std::string("one_pass_finish_kernel, ") + launch_shape(unsigned(R), dev::block_threads) + ", on " +
                         current_device_name() + ": combines " + std::to_string(blocks) + " partials of";
      each([&](auto k, auto& ev) {
        if constexpr (is_full_reduction_v<std::remove_cvref_t<decltype(ev)>>)
          text += std::string(" #") + std::to_string(k.value + 1) + " " + ev.source.text();
      });
      return text;
    });
    launch_one_pass_finish<U, R, Check>(reduce_ops_t<Ev...>{}, partials, int(blocks), targets, s, flag);
  }
}

// An output's memory (dense, row-major) and what it holds.
struct output_memory {
  void* data = nullptr;
  std::size_t bytes = 0;
  std::size_t rank = 0;
  std::array<std::size_t, dev::max_rank> extents{};
};
template <class Ev>
output_memory output_of(void* data, const Ev& ev) {
  output_memory o;
  o.data = data;
  o.rank = Ev::rank;
  std::size_t n = 1;
  for (std::size_t i = 0; i < Ev::rank; ++i) {
    o.extents[i] = ev.extents[i];
    n *= ev.extents[i];
  }
  o.bytes = n * sizeof(typename Ev::value_type);
  return o;
}

inline bool overlaps(const output_memory& o, const memory_read& r) {
  if (o.bytes == 0 || r.span_bytes == 0) return false;
  const char* a = static_cast<const char*>(o.data);
  const char* b = static_cast<const char*>(r.data);
  return a < b + r.span_bytes && b < a + o.bytes;
}
// A read of the output's own memory at the output's own index (same extents, dense row-major).
inline bool same_index(const output_memory& o, const memory_read& r) {
  if (r.data != o.data || r.rank != o.rank) return false;
  std::size_t expect = 1;
  for (std::size_t i = o.rank; i-- > 0;) {
    if (r.extents[i] != o.extents[i]) return false;
    if (o.extents[i] != 1 && r.strides[i] != expect) return false;
    expect *= o.extents[i];
  }
  return true;
}

template <class Ev, class Ctx>
inline constexpr bool has_compute_into =
    requires(Ev& e, Ctx& c, typename Ev::value_type* p) { e.compute_into(p, c); };

template <class Ev>
inline constexpr bool is_reduction_eval_v = false;
template <class Node, class C>
inline constexpr bool is_reduction_eval_v<reduction_eval<Node, C>> = true;

// check_numerics on the GPU: SYMFLOW_CUDA_FUSED_NUMERICS_CHECK=0 at compile time leaves the checked
// kernel instantiations out (less nvcc time); outputs are then scanned by a kernel of their own.
#ifndef SYMFLOW_CUDA_FUSED_NUMERICS_CHECK
#define SYMFLOW_CUDA_FUSED_NUMERICS_CHECK 1
#endif
inline constexpr bool fused_numerics_check = SYMFLOW_CUDA_FUSED_NUMERICS_CHECK != 0;

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

// The device flag check_numerics' kernels set, for one evaluation: null when the switch is off,
// when no output is floating-point, or while the stream is being captured into a CUDA graph (reading
// the flag back would synchronise; a captured evaluation is not checked).
template <class... Ev, class Ctx>
unsigned* numerics_flag_for(Ctx& ctx) {
  if constexpr (!(std::is_floating_point_v<typename Ev::value_type> || ...)) {
    return nullptr;
  } else {
    if (!check_numerics_enabled()) return nullptr;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    SYMFLOW_CUDA_CHECK(cudaStreamIsCapturing(ctx.stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) return nullptr;
    unsigned* flag = ctx.template allocate<unsigned>(1);
    SYMFLOW_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(unsigned), ctx.stream));
    return flag;
  }
}
// The one device-to-host read of check_numerics: waits for the evaluation.
inline bool numerics_flag_clear(const unsigned* flag, cudaStream_t s) {
  if (!flag) return true;
  unsigned h = 0;
  SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(&h, flag, sizeof(unsigned), cudaMemcpyDeviceToHost, s));
  SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(s));
  return h == 0;
}

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
      return (same_frame(f, loop_frame(std::get<plan::members[K]>(evs))) && ...);
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
