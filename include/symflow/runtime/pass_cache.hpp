#pragma once
// Fused passes kept from one run of an interpreter to the next. A training loop runs the same plan
// every step, and what a fused pass builds (its index space, its tile program, its threads' tile
// buffers) depends on the plan alone: a later run of that plan takes the passes back and rebinds
// them to its memory (fused_pass::rebind) instead of building them again, which cost a deep model's
// step hundreds of allocations per pass.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "fused_pass.hpp"
#include "plan_cache.hpp"

namespace symflow {

namespace runtime_detail {

// One group's pass as a run built it, with what it was built from beyond the plan.
struct prepared_pass {
  std::vector<std::uint32_t> externals;  // the values it reads from memory, in its input order
  std::vector<std::uint32_t> order;      // recomputed values, then members
  std::vector<char> stored;              // per entry of order: written to memory
  bool checking = false;                 // stored members scanned for NaN and infinities
  std::unique_ptr<fused_pass> pass;      // null: not built yet
};

// The prepared passes of the plans an interpreter ran last. A run takes its plan's passes for its
// duration (a run of the same plan on another thread meanwhile builds its own) and gives them back.
class pass_cache {
 public:
  // The passes of `plan`, one entry per fusion group (empty entries where none is kept).
  std::vector<prepared_pass> take(const std::shared_ptr<const runtime_plan>& plan) {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->plan == plan) {
        std::vector<prepared_pass> passes = std::move(it->passes);
        entries_.erase(it);
        return passes;
      }
    return std::vector<prepared_pass>(plan->fusion.groups.size());
  }
  void give(std::shared_ptr<const runtime_plan> plan, std::vector<prepared_pass> passes) {
    std::lock_guard lock(mutex_);
    for (const auto& e : entries_)
      if (e.plan == plan) return;  // another run of the plan gave its passes back first
    // The most recent last; a loop alternates between few plans (a last, shorter batch).
    if (entries_.size() == max_plans) entries_.erase(entries_.begin());
    entries_.push_back({std::move(plan), std::move(passes)});
  }

 private:
  static constexpr std::size_t max_plans = 4;
  struct entry {
    std::shared_ptr<const runtime_plan> plan;  // kept alive: its address is the key
    std::vector<prepared_pass> passes;
  };
  std::mutex mutex_;
  std::vector<entry> entries_;
};

}  // namespace runtime_detail

}  // namespace symflow
