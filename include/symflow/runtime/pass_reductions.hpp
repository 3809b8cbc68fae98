#pragma once
// The reductions a fused pass computes on its tiles, which hold whole rows (row_reduction_plan.hpp):
// over the last axis, each row of a tile reduced as the reduction's own unit would; over every
// other axis, a tile's rows added into a row of accumulators per block of rows, the blocks combined
// in order when the pass is done (column_reduction.hpp). Threads' shares of the pass start on whole
// blocks, so each block is one thread's, in row order, whatever the thread count.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "../core/aligned_buffer.hpp"
#include "../core/dtype.hpp"
#include "column_reduction.hpp"

namespace symflow {

// A reduction of a member: over its last axis (reduce_rows), or over every other axis (columns).
struct fused_pass_reduction {
  std::size_t member = 0;  // index in the members
  void (*reduce_rows)(const void* in, dtype type, std::size_t rows, std::size_t count, void* out) = nullptr;
  const column_reduction_functions* columns = nullptr;
  void* out = nullptr;  // the result: one element per row, or per column; of the member's dtype
};

// The reductions over every axis but the last of one pass over `rows` rows of `count` elements.
class pass_column_reductions {
 public:
  // One thread's accumulators: a row per reduction, for the block of rows it is adding.
  struct lane {
    std::size_t block = no_block;
    std::vector<aligned_buffer<unsigned char>> acc;
  };

  pass_column_reductions() = default;
  pass_column_reductions(const std::vector<fused_pass_reduction>& all, const std::vector<dtype>& types,
                         std::size_t rows, std::size_t count)
      : rows_(rows), count_(count), block_rows_(runtime_detail::column_block_rows(rows)),
        blocks_(runtime_detail::column_blocks(rows)) {
    for (std::size_t k = 0; k < all.size(); ++k)
      if (all[k].columns)
        entries_.push_back({k, all[k].columns, types[k],
                            aligned_buffer<unsigned char>(blocks_ * count_ * runtime_detail::column_accumulator_bytes)});
  }

  bool empty() const noexcept { return entries_.empty(); }
  // The rows of a block: the pass's threads take whole multiples of it.
  std::size_t block_rows() const noexcept { return block_rows_; }

  // Adds rows [first, first + rows) of the tile; tile(k) is the tile of reduction k's member (k
  // indexing the pass's reductions).
  template <class Tile>
  void add(lane& ln, std::size_t first, std::size_t rows, Tile&& tile) const {
    if (ln.acc.size() != entries_.size()) {
      ln.acc.clear();
      for (std::size_t e = 0; e < entries_.size(); ++e)
        ln.acc.emplace_back(count_ * runtime_detail::column_accumulator_bytes);
    }
    for (std::size_t done = 0; done < rows;) {
      const std::size_t row = first + done, block = row / block_rows_;
      if (block != ln.block) {
        flush(ln);
        for (std::size_t e = 0; e < entries_.size(); ++e)
          entries_[e].f->start(entries_[e].type, ln.acc[e].data(), count_);
        ln.block = block;
      }
      const std::size_t n = std::min(rows - done, (block + 1) * block_rows_ - row);
      for (std::size_t e = 0; e < entries_.size(); ++e) {
        const auto* x = static_cast<const unsigned char*>(tile(entries_[e].reduction));
        entries_[e].f->add_rows(entries_[e].type, ln.acc[e].data(), x + done * count_ * dtype_size(entries_[e].type),
                                n, count_);
      }
      done += n;
    }
  }

  // The block the lane was adding is complete: its rows become the block's partial results.
  void flush(lane& ln) const {
    if (ln.block == no_block) return;
    const std::size_t bytes = count_ * runtime_detail::column_accumulator_bytes;
    for (std::size_t e = 0; e < entries_.size(); ++e)
      std::memcpy(entries_[e].partials.data() + ln.block * bytes, ln.acc[e].data(), bytes);
    ln.block = no_block;
  }

  // After every block was added: the results, into out(k) for reduction k.
  template <class Out>
  void finish(Out&& out) const {
    for (const auto& e : entries_) e.f->finish(e.type, e.partials.data(), blocks_, count_, rows_, out(e.reduction));
  }

 private:
  static constexpr std::size_t no_block = std::size_t(-1);
  struct entry {
    std::size_t reduction;  // index in the pass's reductions
    const column_reduction_functions* f;
    dtype type;
    // blocks_ rows of count_ accumulators, each block's written by the thread that added it
    mutable aligned_buffer<unsigned char> partials;
  };
  std::size_t rows_ = 0, count_ = 0, block_rows_ = 1, blocks_ = 0;
  std::vector<entry> entries_;
};

}  // namespace symflow
