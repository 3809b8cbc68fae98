#pragma once
// What an interpreter run is asked to do (options) and what it reports back (statistics, profile).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "trace.hpp"
#include "pass_compiler.hpp"

namespace symflow {

struct interpreter_options {
  bool fuse = true;                 // false: every elementwise node is its own pass (for comparison)
  // Elements per tile (rounded up to a multiple of 16); 0 chooses per fused pass. Each op of a group
  // runs over a tile in turn, so a pass reads its inputs in bursts of one tile per input: small
  // tiles keep those bursts within what the hardware prefetcher runs ahead (W1/W2 at 2^24 floats:
  // 128 is faster than 512 to 2048), large ones spend less on the per-op call (about 10 cycles;
  // in cache 512 is faster). 0: 128 for passes that move at least 2 MiB, else 512.
  std::size_t tile_elements = 0;
  // Fused passes compute again the elementwise values of other passes they read (a backward pass
  // recomputing the forward pass's intermediates from what that pass read) instead of having them
  // stored and read back, where that moves fewer arrays (recompute_plan.hpp). Same results bit for
  // bit; not in runs that check numerics or trace values.
  bool recompute = true;
  // Reductions over the last axis of a fused pass's value run in that pass, row by row on its
  // tiles, instead of reading the value back (row_reduction_plan.hpp). Same results bit for bit;
  // not in runs that check numerics or trace values.
  bool fuse_row_reductions = true;
  // NaN / infinity checks on every computed value (fused into the passes); unset: the process-wide
  // check_numerics switch (eval/numerics.hpp).
  std::optional<bool> check_numerics;
  // Intermediate values to record (runtime/trace.hpp); traced nodes are stored by their fused pass.
  const trace_spec* trace = nullptr;
  // Time every unit of work (fused pass, reduction, view, kernel) into last_profile().
  bool profile = false;
  // Fused passes of two or more members run as code generated for the group and compiled by the
  // system's C++ compiler (pass_compiler.hpp: once per structure, cached on disk), every member's
  // value in registers, with the same results bit for bit. Groups it cannot build, or that mix
  // dtypes, run as above. Unset: on when the environment has SYMFLOW_NATIVE_PASSES=1.
  std::optional<bool> native_passes;
  pass_compiler_options compiler;
  // A feed that names no input or parameter of the graph is an error (a misspelt name would
  // otherwise leave the intended input unfed or, with a parameter store, silently use a stale value).
  // true: such feeds are ignored, for callers that feed one set of values to several graphs.
  bool allow_unused_feeds = false;
};

// Where a run spent its time, one entry per unit of work, in evaluation order.
struct interpreter_profile {
  struct entry {
    std::string description;  // "fused pass [mul 'a/mul', sin 'sin', ...] f32[16777216]" or "matmul 'dense/matmul' f32[64,10]"
    double seconds = 0;
  };
  std::vector<entry> entries;

  double total_seconds() const {
    double t = 0;
    for (const auto& e : entries) t += e.seconds;
    return t;
  }
  // The `count` slowest units with their share of the run.
  std::string slowest(std::size_t count = 10) const {
    std::vector<entry> sorted = entries;
    std::sort(sorted.begin(), sorted.end(), [](const entry& a, const entry& b) { return a.seconds > b.seconds; });
    const double total = total_seconds();
    std::string out;
    for (std::size_t i = 0; i < sorted.size() && i < count; ++i) {
      char line[64];
      std::snprintf(line, sizeof line, "%10.3f ms %5.1f%%  ", sorted[i].seconds * 1e3,
                    total > 0 ? 100.0 * sorted[i].seconds / total : 0.0);
      out += line + sorted[i].description + "\n";
    }
    return out;
  }
};

// What one run did, for tests and the profile.
struct interpreter_stats {
  std::size_t fused_groups = 0;         // elementwise passes over memory
  std::size_t fused_nodes = 0;          // elementwise nodes they computed
  std::size_t recomputed_nodes = 0;     // elementwise nodes of one pass computed again by another
  std::size_t fused_reductions = 0;     // reductions computed by the pass computing their operand
  std::size_t materialised_values = 0;  // values written to memory (group outputs, views, kernels, reductions)
  std::size_t chained_nodes = 0;        // elementwise nodes computed in their reader's loop (chained_kernels.hpp)
  std::size_t native_passes = 0;        // fused passes run by generated code
  std::size_t reused_passes = 0;        // fused passes an earlier run of the plan built (pass_cache.hpp)
};

}  // namespace symflow
