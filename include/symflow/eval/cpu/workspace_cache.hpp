#pragma once
// Workspace blocks of finished evaluations, kept per thread for the next one. A training loop (or a
// scan's steps) evaluates the same shapes again and again; blocks handed back to the system come back
// as fresh pages, and their page faults cost more than the arithmetic of small models (a GRU step on
// a batch of 32: three times the run time). The cache is bounded by block count and bytes; a request
// takes the smallest cached block that fits and wastes at most half of it.
#include <cstddef>
#include <utility>
#include <vector>

#include "../../core/aligned_buffer.hpp"

namespace symflow::cpu {

class workspace_cache {
 public:
  static constexpr std::size_t max_blocks = 64;
  static constexpr std::size_t max_bytes = std::size_t(256) << 20;
  static constexpr std::size_t smallest_kept = std::size_t(16) << 10;  // below: malloc's own bins do well

  aligned_buffer<unsigned char> take(std::size_t bytes) {
    std::size_t best = blocks_.size();
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
      const std::size_t size = blocks_[i].size();
      if (size >= bytes && size / 2 <= bytes && (best == blocks_.size() || size < blocks_[best].size())) best = i;
    }
    if (best == blocks_.size()) return aligned_buffer<unsigned char>(bytes);
    aligned_buffer<unsigned char> found = std::move(blocks_[best]);
    blocks_[best] = std::move(blocks_.back());
    blocks_.pop_back();
    bytes_ -= found.size();
    return found;
  }
  void give(aligned_buffer<unsigned char>&& block) {
    if (block.size() < smallest_kept || block.size() > max_bytes) return;
    while (!blocks_.empty() && (blocks_.size() >= max_blocks || bytes_ + block.size() > max_bytes)) {
      bytes_ -= blocks_.front().size();
      blocks_.erase(blocks_.begin());  // the oldest goes first
    }
    bytes_ += block.size();
    blocks_.push_back(std::move(block));
  }

 private:
  std::vector<aligned_buffer<unsigned char>> blocks_;
  std::size_t bytes_ = 0;
};

inline workspace_cache& thread_workspace_cache() {
  thread_local workspace_cache cache;
  return cache;
}

}  // namespace symflow::cpu
