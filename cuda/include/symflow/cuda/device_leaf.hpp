#pragma once
// A value in device memory as the evaluators read it (device_leaf): data, extents, strides, and its
// strides in the frame of the fusion group reading it; what a computation reads from memory
// (memory_read, checked against outputs before they are written); the group frames, which are the
// CPU evaluator's.
#include <array>
#include <cstddef>

#include <symflow/core/tensor.hpp>
#include <symflow/eval/cpu/frame.hpp>

#include "device.hpp"
#include "evaluation_context.hpp"

namespace symflow::cuda {
namespace detail {

// What a computation reads from memory: a visitor receives each leaf's data, the bytes it spans,
// its rank, extents and strides (outputs are checked against it before they are written).
struct memory_read {
  const void* data;
  std::size_t span_bytes;
  std::size_t rank;
  const std::size_t* extents;
  const std::size_t* strides;
};

// Frames, their stride alignment and axis collapsing are the CPU evaluator's (host-side code).
static_assert(dev::max_rank == int(cpu::max_rank));
using cpu::frame_strides;
using group_frame = cpu::frame;
template <std::size_t R>
group_frame frame_of(const extents_t<R>& e) {
  return cpu::frame::of<R>(e);
}
using cpu::align_to_frame;
using cpu::collapse;

// A value in device memory with arbitrary strides, and its strides in the current group's frame.
template <class T>
struct device_leaf {
  const T* data = nullptr;
  std::size_t rank = 0;
  std::array<std::size_t, dev::max_rank> extents{};
  std::array<std::size_t, dev::max_rank> strides{};
  frame_strides in_frame{};

  template <std::size_t R>
  static device_leaf of(const T* data, const extents_t<R>& e, const extents_t<R>& s) {
    device_leaf l;
    l.data = data;
    l.rank = R;
    for (std::size_t i = 0; i < R; ++i) {
      l.extents[i] = e[i];
      l.strides[i] = s[i];
    }
    return l;
  }
  static device_leaf of_shared(const shared_value& v) {
    device_leaf l;
    l.data = static_cast<const T*>(v.data);
    l.rank = v.rank;
    l.extents = v.extents;
    l.strides = v.strides;
    return l;
  }
  std::size_t size() const {
    std::size_t n = 1;
    for (std::size_t i = 0; i < rank; ++i) n *= extents[i];
    return n;
  }
  bool is_contiguous() const {
    std::size_t expect = 1;
    for (std::size_t i = rank; i-- > 0;) {
      if (extents[i] != 1 && strides[i] != expect) return false;
      expect *= extents[i];
    }
    return true;
  }
  // Elements from data to the last element + 1 (what a copy of the underlying memory needs).
  std::size_t span() const {
    std::size_t last = 0;
    for (std::size_t i = 0; i < rank; ++i) {
      if (extents[i] == 0) return 0;
      last += (extents[i] - 1) * strides[i];
    }
    return last + 1;
  }
  template <std::size_t R>
  extents_t<R> extents_as() const {
    extents_t<R> e{};
    for (std::size_t i = 0; i < R; ++i) e[i] = extents[i];
    return e;
  }
  template <std::size_t R>
  extents_t<R> strides_as() const {
    extents_t<R> e{};
    for (std::size_t i = 0; i < R; ++i) e[i] = strides[i];
    return e;
  }

  void bind(const group_frame& f) { in_frame = align_to_frame(f, rank, extents.data(), strides.data()); }
  template <bool Scalar, class F>
  void visit(F&& f) {
    f(in_frame, static_cast<const void*>(data), sizeof(T), Scalar);
  }
  template <class F>
  void visit_reads(F&& f) const {
    if (data) f(memory_read{data, span() * sizeof(T), rank, extents.data(), strides.data()});
  }
  template <int FR, bool Scalar>
  auto lower() const {
    if constexpr (Scalar) {
      return dev::scalar_ref<T>{data};
    } else {
      dev::leaf<T, FR> d{data, {}};
      for (int a = 0; a < FR; ++a) d.s[a] = in_frame[a];
      return d;
    }
  }
};

}  // namespace detail
}  // namespace symflow::cuda
