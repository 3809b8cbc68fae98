#pragma once
// Runs a one-pass group (one_pass_plan.hpp): every member's operand is bound to the shared frame and
// lowered into one kernel (dense and vectorised when every leaf allows it, else strided), launched
// with one wave of blocks, then one kernel finishing the reductions from the blocks' partials.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "device.hpp"
#include "device_leaf.hpp"
#include "fusion_groups.hpp"
#include "kernel_primitives.hpp"
#include "leaf_slots.hpp"
#include "make_evaluator.hpp"
#include "one_pass_kernels.hpp"
#include "one_pass_plan.hpp"
#include "placement_log.hpp"
#include "profile.hpp"
#include "runtime.hpp"
#include "utility_kernels.hpp"

namespace symflow::cuda {
namespace detail {

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
  SYMFLOW_LAUNCH(unsigned(R), dev::block_threads, 0, s, dev::one_pass_finish_kernel<dev::canonical_t<T>, R, Check, Ops...>)(
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
      SYMFLOW_LAUNCH(blocks, dev::block_threads, 0, s, dev::one_pass_dense_kernel<U, env_t, V, R, Check, M...>)(
          m, env, n, partials, identity, flag);
      SYMFLOW_CUDA_CHECK_LAUNCH("one_pass_dense_kernel");
    } else if (n <= std::size_t(UINT32_MAX)) {
      dev::index_frame<std::uint32_t> fi{int(f.rank), {}};
      for (int a = 0; a < int(f.rank); ++a) fi.extents[a] = std::uint32_t(f.extents[a]);
      SYMFLOW_LAUNCH(blocks, dev::block_threads, 0, s, dev::one_pass_strided_kernel<U, env_t, std::uint32_t, FR, R, Check, M...>)(
          m, env, fi, n, partials, identity, flag);
      SYMFLOW_CUDA_CHECK_LAUNCH("one_pass_strided_kernel");
    } else {
      dev::index_frame<std::uint64_t> fi{int(f.rank), {}};
      for (int a = 0; a < int(f.rank); ++a) fi.extents[a] = f.extents[a];
      SYMFLOW_LAUNCH(blocks, dev::block_threads, 0, s, dev::one_pass_strided_kernel<U, env_t, std::uint64_t, FR, R, Check, M...>)(
          m, env, fi, n, partials, identity, flag);
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

}  // namespace detail
}  // namespace symflow::cuda
