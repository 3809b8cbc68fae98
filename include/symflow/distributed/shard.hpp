#pragma once
// Which rows of a batch each rank of a data-parallel run trains on (data_parallel.hpp). Needs no
// MPI: a program can plan its shards, and build without MPI, with this header alone.
#include <cstddef>
#include <span>

namespace symflow::distributed {

// Rows [begin, end) of a global batch of n examples for one rank: contiguous, sizes differing by at
// most one (a rank's shard is empty when the batch has fewer rows than there are ranks).
struct shard {
  std::size_t begin = 0, end = 0, global = 0;
  std::size_t size() const { return end - begin; }
  bool empty() const { return begin == end; }
  // The weight of this rank's mean-loss gradient in the global batch's: size() / global.
  double weight() const { return global ? double(size()) / double(global) : 0.0; }
  // These rows of a batch's example indices.
  std::span<const std::size_t> of(std::span<const std::size_t> batch) const { return batch.subspan(begin, size()); }
};

inline shard shard_of(std::size_t n, int rank, int ranks) {
  const std::size_t r = std::size_t(rank), k = std::size_t(ranks);
  return {n * r / k, n * (r + 1) / k, n};
}
}  // namespace symflow::distributed
