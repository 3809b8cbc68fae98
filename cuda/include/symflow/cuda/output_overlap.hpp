#pragma once
// Whether an output's memory is read by the evaluation writing it (an SGD step writes W - lr * dW
// over W): an output's extent in memory, and the tests compute_outputs (multi_output.hpp) uses to
// decide which outputs must go through scratch memory.
#include <array>
#include <cstddef>

#include "device.hpp"
#include "device_leaf.hpp"

namespace symflow::cuda {
namespace detail {

// An output's memory (dense, row-major) and what it holds.
struct output_memory {
  void* data = nullptr;
  std::size_t bytes = 0;
  std::size_t rank = 0;
  std::array<std::size_t, dev::max_rank> extents{};
};
template <class Ev>
output_memory output_of(void* data, const Ev& ev) {
  output_memory o;
  o.data = data;
  o.rank = Ev::rank;
  std::size_t n = 1;
  for (std::size_t i = 0; i < Ev::rank; ++i) {
    o.extents[i] = ev.extents[i];
    n *= ev.extents[i];
  }
  o.bytes = n * sizeof(typename Ev::value_type);
  return o;
}

inline bool overlaps(const output_memory& o, const memory_read& r) {
  if (o.bytes == 0 || r.span_bytes == 0) return false;
  const char* a = static_cast<const char*>(o.data);
  const char* b = static_cast<const char*>(r.data);
  return a < b + r.span_bytes && b < a + o.bytes;
}
// A read of the output's own memory at the output's own index (same extents, dense row-major).
inline bool same_index(const output_memory& o, const memory_read& r) {
  if (r.data != o.data || r.rank != o.rank) return false;
  std::size_t expect = 1;
  for (std::size_t i = o.rank; i-- > 0;) {
    if (r.extents[i] != o.extents[i]) return false;
    if (o.extents[i] != 1 && r.strides[i] != expect) return false;
    expect *= o.extents[i];
  }
  return true;
}

}  // namespace detail
}  // namespace symflow::cuda
