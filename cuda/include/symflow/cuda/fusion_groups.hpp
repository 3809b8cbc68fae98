#pragma once
// Runs the fusion groups the evaluator tree (evaluators.hpp) describes: each group is lowered to a
// name-free device evaluator and launched as one kernel over its collapsed frame; reductions go
// through the reduce kernels with the fused operand read directly.
#include <vector>

#include "device_code.hpp"  // SYMFLOW_LAUNCH
#include "evaluators.hpp"
#include "profile.hpp"

namespace symflow::cuda {
namespace detail {


struct leaf_record {
  const void* data;
  std::size_t element_size;
};

// Runs the fusion group rooted at `root` over its extents, writing every element of `out` (dense).
// Check: the kernel also sets *flag when a value it stores is NaN or infinite (check_numerics; only
// the groups that write an evaluation's outputs are instantiated with it).
template <bool Check, class Ctx, class T, class H>
void run_map_checked(H& root, Ctx& ctx, T* out, unsigned* flag) {
  static_assert(!Check || std::is_floating_point_v<T>);
  constexpr int FR = H::rank == 0 ? 1 : int(H::rank);
  group_frame f = frame_of<H::rank>(root.extents);
  const std::size_t n = f.size();
  if (n == 0) return;
  root.bind(f);
  frame_strides out_strides{};
  {
    std::size_t acc = 1;
    for (int a = int(f.rank); a-- > 0;) {
      out_strides[a] = acc;
      acc *= f.extents[a];
    }
  }
  std::vector<frame_strides*> arrays{&out_strides};
  std::vector<leaf_record> leaves;
  root.visit([&](frame_strides& s, const void* data, std::size_t size, bool scalar) {
    if (scalar) return;
    arrays.push_back(&s);
    leaves.push_back({data, size});
  });
  collapse(f, arrays.data(), arrays.size());

  constexpr int V = dev::vector_width;
  auto aligned = [](const void* p, std::size_t size) {
    const std::size_t need = std::min<std::size_t>(16, size * V);
    return reinterpret_cast<std::uintptr_t>(p) % need == 0;
  };
  bool dense = f.rank == 1 && aligned(out, sizeof(T));
  for (std::size_t k = 0; k < leaves.size() && dense; ++k)
    dense = (*arrays[k + 1])[0] == 1 && aligned(leaves[k].data, leaves[k].element_size);

  using U = dev::canonical_t<T>;
  using keys = typename group_keys<H>::type;
  const auto d = root.template lower<FR, keys>();
  using ev_t = dev::canonical_t<std::remove_const_t<decltype(d)>>;
  using env_t = dev::leaf_table<keys::size, FR>;
  env_t env{};
  root.template fill_table<keys>(env);
  const cudaStream_t s = ctx.stream;
  auto log = [&](const char* kernel, unsigned grid) {
    place([&] {
      return std::string(kernel) + ", " + launch_shape(grid, dev::block_threads) + ", on " + current_device_name() +
             ": " + describe_group(root) + " -> " + value_type_string<T>(root.extents);
    });
  };
  const profile_region timed(s, [&] {
    return std::string(dense ? "map_dense_kernel" : "map_strided_kernel") + (Check ? " (checked)" : "") + ": " +
           describe_group(root) + " -> " + value_type_string<T>(root.extents);
  });
  if (dense) {
    const std::size_t threads = (n + V - 1) / V;
    const std::size_t blocks = (threads + dev::block_threads - 1) / dev::block_threads;
    log("map_dense_kernel", unsigned(blocks));
    SYMFLOW_LAUNCH(unsigned(blocks), dev::block_threads, 0, s, dev::map_dense_kernel<U, ev_t, env_t, V, Check>)(
        out, d, env, n, flag);
    SYMFLOW_CUDA_CHECK_LAUNCH("map_dense_kernel");
  } else if (n <= std::size_t(UINT32_MAX)) {
    dev::index_frame<std::uint32_t> fi{int(f.rank), {}};
    for (int a = 0; a < int(f.rank); ++a) fi.extents[a] = std::uint32_t(f.extents[a]);
    log("map_strided_kernel (32-bit index)", dev::grid_for(n, dev::block_threads));
    SYMFLOW_LAUNCH(dev::grid_for(n, dev::block_threads), dev::block_threads, 0, s, dev::map_strided_kernel<U, ev_t, env_t, std::uint32_t, FR, Check>)(
        out, d, env, fi, n, flag);
    SYMFLOW_CUDA_CHECK_LAUNCH("map_strided_kernel");
  } else {
    dev::index_frame<std::uint64_t> fi{int(f.rank), {}};
    for (int a = 0; a < int(f.rank); ++a) fi.extents[a] = f.extents[a];
    log("map_strided_kernel (64-bit index)", dev::grid_for(n, dev::block_threads));
    SYMFLOW_LAUNCH(dev::grid_for(n, dev::block_threads), dev::block_threads, 0, s, dev::map_strided_kernel<U, ev_t, env_t, std::uint64_t, FR, Check>)(
        out, d, env, fi, n, flag);
    SYMFLOW_CUDA_CHECK_LAUNCH("map_strided_kernel");
  }
}

template <class Ctx, class T, class H>
void run_map(H& root, Ctx& ctx, T* out) {
  run_map_checked<false>(root, ctx, out, nullptr);
}

// Reduces the fusion group rooted at `operand` over the axes in `mask` into `out` (dense, the kept
// extents in order), evaluating the operand on the fly.
// Check: as run_map_checked, for the reduced values written to `out`.
template <bool Check, class Op, class T, class Ctx, class H, std::size_t RI>
void run_reduce_checked(H& operand, Ctx& ctx, const std::array<bool, RI>& mask, T* out, std::size_t out_size,
                        std::size_t count, const node_ref& source, unsigned* flag) {
  static_assert(!Check || std::is_floating_point_v<T>);
  constexpr int FR = RI == 0 ? 1 : int(RI);
  const cudaStream_t s = ctx.stream;
  const T identity = Op::template identity<T>();
  group_frame f = frame_of<RI>(operand.extents);
  if (out_size == 0) return;
  if (f.size() == 0) {
    dev::fill(out, out_size, T(Op::finish(identity, count)), s);
    if constexpr (Check) dev::scan_nonfinite(out, out_size, flag, s);
    return;
  }
  operand.bind(f);
  frame_strides out_strides{};
  {
    std::size_t acc = 1;
    for (int a = int(f.rank); a-- > 0;) {
      bool reduced = true;
      if constexpr (RI > 0) reduced = mask[std::size_t(a)];
      out_strides[a] = reduced ? 0 : acc;
      if (!reduced) acc *= f.extents[a];
    }
  }
  std::vector<frame_strides*> arrays{&out_strides};
  operand.visit([&](frame_strides& st, const void*, std::size_t, bool scalar) {
    if (!scalar) arrays.push_back(&st);
  });
  collapse(f, arrays.data(), arrays.size());

  dev::reduce_frame rf{int(f.rank), 0u, -1, -1, {}};
  int n_reduced = 0, n_kept = 0, last_reduced = -1, last_kept = -1;
  for (int a = 0; a < int(f.rank); ++a) {
    rf.extents[a] = f.extents[a];
    if (out_strides[a] == 0) {
      rf.reduced |= 1u << a;
      ++n_reduced;
      last_reduced = a;
    } else {
      ++n_kept;
      last_kept = a;
    }
  }
  if (n_reduced == 1) rf.single_reduced = last_reduced;
  if (n_kept == 1) rf.single_kept = last_kept;
  // With no reduced (or no kept) axis left the decoding is trivial: index 0 everywhere.
  if (n_reduced == 0) rf.single_reduced = FR;  // matches no axis
  if (n_kept == 0) rf.single_kept = FR;

  using U = dev::canonical_t<T>;
  using O = dev::canonical_t<Op>;
  using keys = typename group_keys<H>::type;
  const auto d = operand.template lower<FR, keys>();
  using ev_t = dev::canonical_t<std::remove_const_t<decltype(d)>>;
  using env_t = dev::leaf_table<keys::size, FR>;
  env_t env{};
  operand.template fill_table<keys>(env);
  const std::size_t target_threads = std::size_t(detail::sm_count()) * 2048;
  const bool inner_reduced = (rf.reduced >> (f.rank - 1)) & 1u;
  std::size_t chunks = 1;
  int group_log2 = 5;
  if (inner_reduced) {
    group_log2 = count >= 2048 ? 8 : 5;
    const std::size_t group = std::size_t(1) << group_log2;
    const std::size_t busy = out_size * group;
    if (busy < target_threads)
      chunks = std::min((target_threads + busy - 1) / busy, (count + group * 16 - 1) / (group * 16));
  } else {
    // A block covers 32 outputs with 8 threads each; chunks of at least 64 reduced elements (8 per
    // thread) until the blocks fill the GPU.
    const std::size_t busy = (out_size + dev::cols_per_block - 1) / dev::cols_per_block * dev::block_threads;
    if (busy < target_threads)
      chunks = std::min((target_threads + busy - 1) / busy, (count + 63) / 64);
  }
  chunks = std::max<std::size_t>(1, std::min<std::size_t>(chunks, 65535));
  const std::size_t chunk = (count + chunks - 1) / chunks;
  chunks = (count + chunk - 1) / chunk;
  const bool partial = chunks > 1;
  T* dst = partial ? ctx.template allocate<T>(chunks * out_size) : out;

  auto log = [&](const char* kernel, dim3 grid) {
    place([&] {
      return std::string(kernel) + ", " + launch_shape(grid, dev::block_threads) + ", on " + current_device_name() +
             ": " + source.text() + "(" + describe_group(operand) + ") -> " + std::string(dtype_name(dtype_v<T>)) +
             "[" + std::to_string(out_size) + "]" + (partial ? " (partials)" : "");
    });
  };
  const profile_region timed(s, [&] {
    return std::string(inner_reduced ? "reduce_rows_kernel" : "reduce_cols_kernel") + (partial ? " + reduce_finish_kernel" : "") +
           (Check ? " (checked)" : "") + ": " + source.text() + "(" + describe_group(operand) + ") -> " +
           std::string(dtype_name(dtype_v<T>)) + "[" + std::to_string(out_size) + "]";
  });
  if (inner_reduced) {
    const std::size_t per_block = std::size_t(dev::block_threads) >> group_log2;
    const dim3 grid(dev::grid_for(out_size, per_block, 65535u * 32u), unsigned(chunks));
    log(group_log2 == 5 ? "reduce_rows_kernel (a warp per output)" : "reduce_rows_kernel (a block per output)", grid);
    SYMFLOW_LAUNCH(grid, dev::block_threads, 0, s, dev::reduce_rows_kernel<O, U, ev_t, env_t, FR, Check>)(
        d, env, rf, dst, out_size, count, chunk, identity, group_log2, partial, flag);
    SYMFLOW_CUDA_CHECK_LAUNCH("reduce_rows_kernel");
  } else {
    const dim3 grid(dev::grid_for(out_size, dev::cols_per_block, 65535u * 32u), unsigned(chunks));
    log("reduce_cols_kernel", grid);
    SYMFLOW_LAUNCH(grid, dev::block_threads, 0, s, dev::reduce_cols_kernel<O, U, ev_t, env_t, FR, Check>)(
        d, env, rf, dst, out_size, count, chunk, identity, partial, flag);
    SYMFLOW_CUDA_CHECK_LAUNCH("reduce_cols_kernel");
  }
  if (partial) {
    place([&] {
      return std::string("reduce_finish_kernel, ") + launch_shape(dev::grid_for(out_size, dev::block_threads), dev::block_threads) +
             ", on " + current_device_name() + ": combines " + std::to_string(chunks) + " partials of " + source.text();
    });
    SYMFLOW_LAUNCH(dev::grid_for(out_size, dev::block_threads), dev::block_threads, 0, s, dev::reduce_finish_kernel<O, U, Check>)(
        dst, out, out_size, int(chunks), count, identity, flag);
    SYMFLOW_CUDA_CHECK_LAUNCH("reduce_finish_kernel");
  }
}

template <class Op, class T, class Ctx, class H, std::size_t RI>
void run_reduce(H& operand, Ctx& ctx, const std::array<bool, RI>& mask, T* out, std::size_t out_size,
                std::size_t count, const node_ref& source) {
  run_reduce_checked<false, Op, T>(operand, ctx, mask, out, out_size, count, source, nullptr);
}

}  // namespace detail
}  // namespace symflow::cuda
