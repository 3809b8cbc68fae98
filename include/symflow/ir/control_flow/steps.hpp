#pragma once
// The pieces the control-flow ops' loops are made of: a step of a stacked value, a copy, a sum in
// the element type. A loop calls its sub-graphs through a runner of the interpreter's
// (runtime/run_bodies.hpp): runner.call(body, arguments) returns the body's outputs.
#include <cstring>
#include <string>
#include <vector>

#include "../../expr/runtime_forms.hpp"
#include "../value.hpp"

namespace symflow {
namespace control_flow {

// Step t of a [T, ...] array: an array of the step's extents over its elements.
inline runtime_array step_of(const runtime_array& all, std::size_t t) {
  runtime_extents e(all.extents.begin() + 1, all.extents.end());
  const std::size_t bytes = element_count(e) * dtype_size(all.type);
  return runtime_array{all.type, std::move(e), static_cast<char*>(all.data) + t * bytes};
}

inline runtime_array array_of(runtime_tensor& t) { return runtime_array{t.type(), t.extents(), t.bytes()}; }
inline runtime_array array_of(const runtime_tensor& t) {
  return runtime_array{t.type(), t.extents(), const_cast<void*>(t.bytes())};
}

// Copies `from` into `to`; both hold the same dtype, and the extents must agree (a body that
// changes a carried value's extents from one step to the next is refused, naming the node).
inline void copy_value(const runtime_array& to, const runtime_array& from, const std::string& who) {
  if (to.type != from.type || to.extents != from.extents)
    throw shape_error(who + ": a step gives " + std::string(dtype_name(from.type)) + format_extents(from.extents) +
                      " where " + std::string(dtype_name(to.type)) + format_extents(to.extents) + " is carried");
  const std::size_t bytes = element_count(to.extents) * dtype_size(to.type);
  if (bytes) std::memcpy(to.data, from.data, bytes);
}

// to += from, elementwise, in their floating dtype (adjoints).
inline void add_into(const runtime_array& to, const runtime_array& from, const std::string& who) {
  if (to.type != from.type || to.extents != from.extents)
    throw shape_error(who + ": an adjoint of " + std::string(dtype_name(from.type)) + format_extents(from.extents) +
                      " meets one of " + std::string(dtype_name(to.type)) + format_extents(to.extents));
  with_float_element(to.type, who, [&](auto zero) {
    using T = decltype(zero);
    T* a = to.as<T>();
    const T* b = from.as<T>();
    for (std::size_t i = 0, n = element_count(to.extents); i < n; ++i) a[i] += b[i];
  });
}

// A zero-filled value (an adjoint before anything flowed into it).
inline runtime_tensor zeros(dtype type, const runtime_extents& extents) {
  runtime_tensor t(type, extents);
  if (t.byte_size()) std::memset(t.bytes(), 0, t.byte_size());
  return t;
}

}  // namespace control_flow
}  // namespace symflow
