#pragma once
// What a checkpoint reader or writer reports, and the limits it holds a file to.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "../core/error.hpp"

namespace symflow {
// A checkpoint file could not be written, or a file read as one is malformed.
class checkpoint_error : public error {
 public:
  using error::error;
};

using checkpoint_metadata = std::map<std::string, std::string>;

// Bounds a hostile header before its allocation; safetensors' own reader uses the same limit.
inline constexpr std::uint64_t checkpoint_max_header_bytes = 100u << 20;
// The header is flat: the top object (1), a tensor's object or __metadata__ (2), a tensor's
// shape or data_offsets (3). Anything deeper is refused before parsing (core/json_limits.hpp).
inline constexpr std::size_t checkpoint_max_header_depth = 3;
// Axes per tensor (safetensors sets none; every framework stays far below).
inline constexpr std::size_t checkpoint_max_rank = 64;

}  // namespace symflow
