#pragma once
// What the ops' runtime forms work on. An op with compile-time attributes (an axis, a permutation, a
// target shape) also has a runtime form in its own file that takes those attributes as values: the
// graph interpreter and the graph builder call it (runtime/). Attributes arrive through an
// object with integer(key), integers(key) and dtype_of(key).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"

namespace symflow {

using runtime_extents = std::vector<std::size_t>;

inline std::size_t element_count(const runtime_extents& e) {
  std::size_t n = 1;
  for (auto x : e) n *= x;
  return n;
}

// Where a view's elements are, in elements of its operand's storage.
struct runtime_layout {
  runtime_extents extents;
  std::vector<std::size_t> strides;
  std::size_t offset = 0;

  static runtime_layout contiguous(runtime_extents extents) {
    runtime_layout l{std::move(extents), {}, 0};
    l.strides.assign(l.extents.size(), 1);
    for (std::size_t i = l.extents.size(); i-- > 1;) l.strides[i - 1] = l.strides[i] * l.extents[i];
    return l;
  }
};

// An array of the interpreter's, as kernels' runtime forms see it: contiguous (row-major), except
// for the operands of a kernel whose op declares strided_matrix_operands (matmul), which may be a
// rank-2 view read in place (a transposed matrix) with these element strides.
struct runtime_array {
  dtype type;
  runtime_extents extents;
  void* data;
  std::vector<std::size_t> strides{};  // empty: row-major contiguous
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// f(float{}) or f(double{}) by a runtime dtype, for kernels' runtime forms that take floating
// operands only; any other dtype is an error naming the op.
template <class F>
void with_float_element(dtype t, std::string_view op, F&& f) {
  if (t == dtype::f32) f(float{});
  else if (t == dtype::f64) f(double{});
  else throw value_error(std::string(op) + ": takes f32 or f64 operands, not " + std::string(dtype_name(t)));
}

// An axis attribute checked against the operand's rank.
inline std::size_t runtime_axis(const std::string& who, std::int64_t axis, std::size_t rank) {
  if (axis < 0 || std::size_t(axis) >= rank)
    throw shape_error(who + ": axis " + std::to_string(axis) + " is outside an operand of rank " + std::to_string(rank));
  return std::size_t(axis);
}

}  // namespace symflow
