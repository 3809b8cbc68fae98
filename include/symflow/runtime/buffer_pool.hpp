#pragma once
// Storage for an interpreter's intermediates, kept between runs and between values of one run.
//
// A training loop runs the same graph with the same extents thousands of times. Allocating every
// intermediate afresh per run costs more than the allocation: large blocks come from mmap, and the
// kernel zeroes each page at its first touch — measured as about 7% of an 8-layer MLP's step. The
// pool hands out a tensor of the wanted dtype and extents that nobody holds (a value released
// after its last use earlier in the run, or one from an earlier run), else allocates one and keeps
// it. So the storage a run keeps is about its peak of simultaneously live intermediates, not their
// sum.
//
// Elements of a reused tensor are whatever the previous holder wrote; every kernel writes all of its
// output (as it must for uninitialised storage anyway).
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "../core/dtype.hpp"
#include "../ir/value.hpp"

namespace symflow::runtime_detail {

class buffer_pool {
 public:
  // A tensor of this dtype and extents that only the caller holds from now on, beside the pool
  // (its use count is 2 while the caller's one pointer lives; the pool hands out only those at 1).
  std::shared_ptr<runtime_tensor> acquire(dtype type, const runtime_extents& extents) {
    const std::size_t bytes = element_count(extents) * dtype_size(type);
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<runtime_tensor>>& same_size = kept_[bytes];
    for (std::size_t i = 0; i < same_size.size(); ++i) {
      std::shared_ptr<runtime_tensor>& t = same_size[i];
      if (t.use_count() != 1) continue;  // held by a value of a run
      // A tensor moved out to a caller's outputs (interpreter::take_outputs) is empty: dropped.
      if (t->byte_size() != bytes) {
        t = std::move(same_size.back());
        same_size.pop_back();
        --i;
        continue;
      }
      if (t->type() == type && t->extents() == extents) return t;
    }
    same_size.push_back(std::make_shared<runtime_tensor>(type, extents));
    return same_size.back();
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<std::shared_ptr<runtime_tensor>>> kept_;  // by byte size
};

}  // namespace symflow::runtime_detail
