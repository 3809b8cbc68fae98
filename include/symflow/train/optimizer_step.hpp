#pragma once
// The step count every optimiser's state holds: entry "step", an int64 scalar, the number of
// updates made (the learning-rate schedule is read at it, so a resumed run continues it).
#include <cstdint>

#include "../core/params.hpp"
#include "../core/tensor.hpp"

namespace symflow {

// The number of updates the optimiser whose state this is has made.
inline std::uint64_t optimizer_step(const params& state) {
  return static_cast<std::uint64_t>(state.view<std::int64_t, shape<>>("step").data()[0]);
}

namespace detail {
inline void set_optimizer_step(params& state, std::uint64_t step) {
  state.set("step", tensor<std::int64_t, shape<>>(static_cast<std::int64_t>(step)));
}
}  // namespace detail
}  // namespace symflow
