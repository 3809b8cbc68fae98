#pragma once
// The interpreter's values: a dtype, extents known at run time and aligned, uninitialised storage
// (a graph_tensor's std::vector would zero every output before it is written: one extra pass over
// memory per node).
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../core/aligned_buffer.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"
#include "../core/tensor.hpp"
#include "../expr/runtime_forms.hpp"
#include "graph.hpp"

namespace symflow {

class runtime_tensor {
 public:
  runtime_tensor() = default;
  runtime_tensor(dtype type, runtime_extents extents)
      : type_(type), extents_(std::move(extents)), bytes_(element_count(extents_) * dtype_size(type_)) {}

  template <class T, class S>
  explicit runtime_tensor(const tensor<T, S>& t)
      : runtime_tensor(dtype_v<T>, runtime_extents(t.extents().begin(), t.extents().end())) {
    if (t.size()) std::memcpy(bytes_.data(), t.data(), t.size() * sizeof(T));
  }
  explicit runtime_tensor(const graph_tensor& g)
      : runtime_tensor(g.type, runtime_extents(g.extents.begin(), g.extents.end())) {
    if (g.bytes.size() != bytes_.size())
      throw value_error("runtime_tensor: " + std::to_string(g.bytes.size()) + " bytes do not hold " +
                        std::string(dtype_name(g.type)) + format_extents(extents_));
    if (!g.bytes.empty()) std::memcpy(bytes_.data(), g.bytes.data(), g.bytes.size());
  }

  dtype type() const noexcept { return type_; }
  const runtime_extents& extents() const noexcept { return extents_; }
  std::size_t rank() const noexcept { return extents_.size(); }
  std::size_t size() const noexcept { return element_count(extents_); }
  std::size_t byte_size() const noexcept { return bytes_.size(); }
  void* bytes() noexcept { return bytes_.data(); }
  const void* bytes() const noexcept { return bytes_.data(); }

  template <class T>
  T* data() {
    check_dtype<T>();
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <class T>
  const T* data() const {
    check_dtype<T>();
    return reinterpret_cast<const T*>(bytes_.data());
  }

  // A typed copy with the static shape S; throws value_error / shape_error naming what differs.
  template <class T, shape_spec S>
  tensor<T, S> as() const {
    check_dtype<T>();
    extents_t<S::rank> e{};
    if (extents_.size() == S::rank) std::copy(extents_.begin(), extents_.end(), e.begin());
    if (extents_.size() != S::rank || !extents_match<S>(e))
      throw shape_error("runtime_tensor has shape " + format_extents(extents_) + ", expected " + shape_string<S>());
    tensor<T, S> out(e, uninitialized);
    if (out.size()) std::memcpy(out.data(), bytes_.data(), out.size() * sizeof(T));
    return out;
  }
  graph_tensor to_graph_tensor() const {
    graph_tensor g;
    g.type = type_;
    g.extents.assign(extents_.begin(), extents_.end());
    g.bytes.assign(static_cast<const unsigned char*>(bytes()), static_cast<const unsigned char*>(bytes()) + byte_size());
    return g;
  }
  std::string type_string() const { return std::string(dtype_name(type_)) + format_extents(extents_); }

 private:
  template <class T>
  void check_dtype() const {
    if (dtype_v<T> != type_)
      throw value_error("runtime_tensor holds " + std::string(dtype_name(type_)) + " values, not " +
                        std::string(dtype_name(dtype_v<T>)));
  }
  dtype type_ = dtype::f32;
  runtime_extents extents_;
  aligned_buffer<unsigned char> bytes_;
};

}  // namespace symflow
