#pragma once
// Row blocks: a reduction feeding elementwise work (softmax, layer norm, logsumexp, a loss over
// rows) evaluated one block of rows at a time, so that each row is read from memory once.
//
// Unblocked, every inner reduction is a pass of its own over the whole tensor, and its users read
// the operand again: softmax reads x three times (max, sum of exponentials, result). Evaluated on a
// block of rows small enough to stay in cache, the same passes read the block from memory once and
// then from cache. Nothing changes in the evaluators: a block is the evaluator tree copied with its
// leaves sliced to the block's rows and its inner reductions emptied, then computed as usual with a
// block-sized scratch memory. This is possible when no reduction in the tree (outside values that
// are computed whole first: kernels, views, parts that do not vary along the rows) reduces across
// the output's first axis; each output row then depends only on the same row of its inputs.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/aligned_buffer.hpp"
#include "../../core/parallel.hpp"
#include "context.hpp"
#include "materialised_evaluators.hpp"

namespace symflow::cpu::row_blocks {

// A tree's axis that runs along the blocked rows: an axis index, or `none` where the value does not
// vary along them (a broadcast operand: gamma in layer norm).
inline constexpr std::size_t none = std::size_t(-1);

// What the blocking needs to know of an evaluator type: whether it knows how to slice it (`known`:
// every node type the CPU evaluator builds) and whether blocking gains anything (`has_reduction`:
// an inner reduction that would otherwise be a pass of its own).
template <class E>
struct traits {
  static constexpr bool known = false, has_reduction = false;
};
template <class T, std::size_t R>
struct traits<memory_eval<T, R>> {
  static constexpr bool known = true, has_reduction = false;
};
template <class T>
struct traits<literal_eval<T>> {
  static constexpr bool known = true, has_reduction = false;
};
template <class Op, class T, std::size_t R, class... C>
struct traits<elementwise_eval<Op, T, R, C...>> {
  static constexpr bool known = (traits<C>::known && ...), has_reduction = (traits<C>::has_reduction || ...);
};
template <class Node, class Inner>
struct traits<reused_eval<Node, Inner>> : traits<Inner> {};
template <class Node, class C>
struct traits<reduction_eval<Node, C>> {
  static constexpr bool known = traits<C>::known, has_reduction = true;
};
template <class Node, class Inner>
struct traits<small_map_eval<Node, Inner>> {
  static constexpr bool known = traits<Inner>::known, has_reduction = true;
};
// Computed whole before the blocks, then sliced like a leaf.
template <class Node, class C>
struct traits<view_eval<Node, C>> {
  static constexpr bool known = true, has_reduction = false;
};
template <class Node, class... C>
struct traits<kernel_eval<Node, C...>> {
  static constexpr bool known = true, has_reduction = false;
};

template <class E>
inline constexpr bool worth_trying = traits<E>::known && traits<E>::has_reduction && (E::rank > 0);

// Evaluators computed into memory once per block: inner reductions and values made of them.
template <class E>
concept per_block = requires { typename E::reduced_node; } || requires(E& e) { e.inner; };

// The operand axis that a reduction's result axis `a` comes from.
template <class Node>
constexpr std::size_t reduction_operand_axis(std::size_t a) {
  if (a == none || Node::keep_dims) return a;
  for (std::size_t i = 0, kept = 0; i < Node::mask.size(); ++i) {
    if (Node::mask[i]) continue;
    if (kept++ == a) return i;
  }
  return none;
}
// The axis of an operand of rank `rc` under a node of rank `r` (broadcasting aligns on the right).
constexpr std::size_t operand_axis(std::size_t a, std::size_t r, std::size_t rc) {
  return a == none || a + rc < r ? none : a + rc - r;
}

// Calls f(child, child_axis) for each child an evaluator reads.
template <class E, class F>
void for_children(E& e, std::size_t a, F&& f) {
  if constexpr (requires { e.children; }) {
    e.for_read([&](auto& c) { f(c, operand_axis(a, E::rank, std::remove_cvref_t<decltype(c)>::rank)); });
  } else if constexpr (requires { typename E::reduced_node; }) {
    f(e.operand, reduction_operand_axis<typename E::reduced_node>(a));
  } else if constexpr (requires { e.inner; }) {
    f(e.inner, a);
  }
}

// The memory one row of a block reads from sliced leaves (a leaf read in several places counts
// once: it is in cache after the first).
struct row_footprint {
  std::size_t bytes = 0;
  std::size_t per_block_values = 0;  // inner reductions (and values of them) computed per block
  std::array<const void*, 32> seen{};
  std::size_t seen_count = 0;
  void add(const void* data, std::size_t n) {
    for (std::size_t i = 0; i < seen_count; ++i)
      if (data && seen[i] == data) return;
    if (data && seen_count < seen.size()) seen[seen_count++] = data;
    bytes += n;
  }
};
// Bytes of one index of axis `a` of a value with these extents.
inline std::size_t bytes_per_row(const std::size_t* extents, std::size_t rank, std::size_t a, std::size_t element) {
  for (std::size_t i = 0; i < rank; ++i) element *= i == a ? 1 : extents[i];
  return element;
}
template <class T>
void add_leaf(const leaf_eval<T>& l, std::size_t a, std::size_t full, row_footprint& fp) {
  if (a == none || l.extents[a] != full) return;
  fp.add(l.data, bytes_per_row(l.extents.data(), l.rank, a, sizeof(T)));
}
template <class E>
void count_bytes(E& e, std::size_t a, std::size_t full, row_footprint& fp) {
  if constexpr (requires { e.as_leaf(); e.result; }) {
    if constexpr (per_block<E>) {
      if (a != none && e.extents[a] == full) {
        ++fp.per_block_values;
        for_children(e, a, [&](auto& c, std::size_t ca) { count_bytes(c, ca, full, fp); });
      }
    } else if (a != none && e.extents[a] == full) {
      // A kernel or view: its result is computed whole, then read in blocks. Its extents stand in
      // for the result's, which is not there yet.
      fp.add(nullptr, bytes_per_row(e.extents.data(), E::rank, a, sizeof(typename E::value_type)));
    }
  } else if constexpr (requires { e.as_leaf(); }) {
    add_leaf(e.as_leaf(), a, full, fp);
  } else if constexpr (requires { e.children; }) {
    if (a != none && e.extents[a] == full) for_children(e, a, [&](auto& c, std::size_t ca) { count_bytes(c, ca, full, fp); });
  }
}

// Before the blocks: computes, whole and once, every value that is not split into blocks (kernels,
// views, and whatever does not vary along the rows).
template <class E, class Ctx>
void prepare_whole_parts(E& e, std::size_t a, std::size_t full, Ctx& ctx) {
  const bool along_rows = a != none && e.extents[a] == full;
  if constexpr (per_block<E> || requires { e.children; }) {
    if (!along_rows) e.prepare(ctx);
    else for_children(e, a, [&](auto& c, std::size_t ca) { prepare_whole_parts(c, ca, full, ctx); });
  } else {
    e.prepare(ctx);  // leaves: nothing; kernels and views: computed whole
  }
}

// The scratch memory and materialised values of one block; a thread keeps it from block to block
// (the same requests come again, so after the first block nothing is allocated).
class block_context : public materialised_memo {
 public:
  void start_block() {
    materialised.clear();
    by_type_.clear();
    chunk_ = 0;
    used_ = 0;
  }
  // Values that their type alone determines (reused_eval's), found by type.
  template <class E>
  const void* find_by_type() const {
    for (const auto& [key, data] : by_type_)
      if (key == type_key<E>()) return data;
    return nullptr;
  }
  template <class E>
  void remember_by_type(const void* data) {
    by_type_.emplace_back(type_key<E>(), data);
  }
  template <class T>
  T* allocate(std::size_t count) {
    const std::size_t bytes = (count * sizeof(T) + storage_alignment - 1) / storage_alignment * storage_alignment;
    while (chunk_ < chunks_.size() && used_ + bytes > chunks_[chunk_].size()) {
      ++chunk_;
      used_ = 0;
    }
    if (chunk_ == chunks_.size())
      chunks_.emplace_back(std::max(bytes, chunks_.empty() ? std::size_t(64) << 10 : 2 * chunks_.back().size()));
    T* p = reinterpret_cast<T*>(chunks_[chunk_].data() + used_);
    used_ += bytes;
    return p;
  }

 private:
  template <class E>
  static const void* type_key() {
    static const char key = 0;
    return &key;
  }
  std::vector<aligned_buffer<unsigned char>> chunks_;
  std::size_t chunk_ = 0, used_ = 0;
  std::vector<std::pair<const void*, const void*>> by_type_;
};

// Slices the tree copy `e` to rows [begin, begin + count) of axis `a`. A value that occurs several
// times in the pass (reused_eval) is then computed once into the block's memory, inner ones first,
// so that reductions and the pass read it instead of computing it again (softmax's exponentials:
// summed, then scaled).
template <class T>
void slice_leaf(leaf_eval<T>& l, std::size_t a, std::size_t full, std::size_t begin, std::size_t count) {
  if (a == none || l.extents[a] != full) return;
  l.data += begin * l.strides[a];
  l.extents[a] = count;
}
template <class E, class Ctx>
void slice(E& e, std::size_t a, std::size_t full, std::size_t begin, std::size_t count, Ctx& bctx) {
  if constexpr (requires { e.extents; }) {
    if (a == none || e.extents[a] != full) return;  // read whole, the same in every block
    e.extents[a] = count;
  }
  if constexpr (per_block<E>) {
    e.result = {};  // computed per block
    for_children(e, a, [&](auto& c, std::size_t ca) { slice(c, ca, full, begin, count, bctx); });
  } else if constexpr (requires { e.result; }) {
    slice_leaf(e.result, a, full, begin, count);
  } else if constexpr (requires { e.as_leaf(); }) {
    slice_leaf(static_cast<leaf_eval<typename E::value_type>&>(e), a, full, begin, count);
  } else if constexpr (requires { e.children; }) {
    for_children(e, a, [&](auto& c, std::size_t ca) { slice(c, ca, full, begin, count, bctx); });
  }
  if constexpr (requires { e.stored; }) {
    using T = typename E::value_type;
    constexpr std::size_t R = E::rank;
    const auto strides = row_major_strides<R>(e.extents);
    if (const T* found = static_cast<const T*>(bctx.template find_by_type<E>())) {
      e.stored = leaf_eval<T>::template of<R>(found, e.extents, strides);
      return;
    }
    e.stored = {};
    T* out = bctx.template allocate<T>(element_count<R>(e.extents));
    e.prepare(bctx);
    // As its inner evaluator: the per-element slot of reused_eval is for repeats within one pass.
    run_map<T, typename E::inner_type, false>(e, frame::of<R>(e.extents), out);
    e.stored = leaf_eval<T>::template of<R>(out, e.extents, strides);
    bctx.template remember_by_type<E>(out);
  }
}

// What one block reads and writes: half a core's L2 or less (1-2 MB on the machines measured), so
// that the second and third reads of a row find it there. Smaller blocks pay the per-block set-up
// (copying and slicing the evaluator tree, starting each inner pass) more often: softmax over
// [8192, 512] took 1.79 / 1.69 / 1.61 ms with 128 / 256 / 512 KB blocks (2-core Xeon, 2026-11-28).
inline constexpr std::size_t block_bytes = std::size_t(512) << 10;
// Rows larger than this are not blocked: one row would not stay in cache between its passes.
inline constexpr std::size_t max_row_bytes = std::size_t(1) << 20;

// Computes the root `ev` (an elementwise tree or a reduction) into `out` block by block. Returns
// false, having computed nothing, where blocking does not apply or would not pay; else true, with
// `finite` telling whether every element written is finite (elementwise roots).
template <class T, class Ev, class Ctx>
bool compute(Ev& ev, Ctx& ctx, T* out, bool& finite) {
  const std::size_t full = ev.extents[0];
  if (full < 2) return false;
  // A root reduction whose result rows are not its operand's first axis (the column sums of
  // [N*H*W, C], a bias gradient: the result's rows are the channels) would read each block with a
  // stride, two channels out of every 32: ten times slower than one pass over the operand.
  if constexpr (requires { typename Ev::reduced_node; })
    if (reduction_operand_axis<typename Ev::reduced_node>(0) != 0) return false;
  row_footprint footprint;
  count_bytes(ev, 0, full, footprint);
  // The result's row is written too.
  const std::size_t row_bytes = footprint.bytes + element_count<Ev::rank>(ev.extents) / full * sizeof(T);
  if (footprint.per_block_values == 0 || footprint.bytes == 0 || row_bytes > max_row_bytes) return false;
  // Below 128 KB everything stays in cache anyway.
  if (full * row_bytes < parallel_threshold * sizeof(float)) return false;

  prepare_whole_parts(ev, 0, full, ctx);
  const std::size_t out_row = element_count<Ev::rank>(ev.extents) / full;
  const std::size_t threads = std::size_t(std::max(1, max_threads()));
  std::size_t rows_per_block = std::max<std::size_t>(1, block_bytes / row_bytes);
  rows_per_block = std::min(rows_per_block, std::max<std::size_t>(1, full / (4 * threads)));
  const std::size_t blocks = (full + rows_per_block - 1) / rows_per_block;

  std::atomic<bool> all_finite{true};
  const auto run_block = [&](block_context& bctx, std::size_t b) {
    const std::size_t begin = b * rows_per_block, count = std::min(rows_per_block, full - begin);
    Ev local = ev;
    bctx.start_block();
    slice(local, 0, full, begin, count, bctx);
    T* o = out + begin * out_row;
    if constexpr (requires { local.compute_into(o, bctx); }) {
      local.compute_into(o, bctx);
    } else {
      local.prepare(bctx);
      if (!run_map<T>(local, frame::of<Ev::rank>(local.extents), o)) all_finite.store(false, std::memory_order_relaxed);
    }
  };
  {
    // The first block on this thread, counted: the blocked pass counts as the one it replaces.
    block_context bctx;
    serial_scope serial(true);
    run_block(bctx, 0);
  }
  std::atomic<std::size_t> next{1};
  const auto worker = [&] {
    block_context bctx;
    serial_scope serial(true);
    const bool was_muted = counters_muted();
    counters_muted() = true;
    for (std::size_t b; (b = next.fetch_add(1, std::memory_order_relaxed)) < blocks;) run_block(bctx, b);
    counters_muted() = was_muted;
  };
#if defined(_OPENMP)
  if (threads > 1 && blocks > 2) {
#pragma omp parallel num_threads(int(threads))
    worker();
  } else {
    worker();
  }
#else
  worker();
#endif
  if constexpr (!requires { typename Ev::reduced_node; }) ++counters().fused_passes;
  ++counters().row_blocked;
  finite = all_finite.load();
  return true;
}

}  // namespace symflow::cpu::row_blocks
