#pragma once
// The values a graph runner (graph_runner.hpp) reads and returns: owning device arrays, feeds (host or
// device memory) and the dtype/extents specs used for planning without values.
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <symflow/ir/value.hpp>

#include "../device_tensor.hpp"
#include "compiler.hpp"

namespace symflow::cuda {

// Owning device memory with a dtype and extents (cudaMalloc / cudaFree; shared ownership).
class device_array {
 public:
  device_array() = default;
  device_array(dtype type, runtime_extents extents) : type_(type), extents_(std::move(extents)) {
    const std::size_t bytes = byte_size();
    void* p = nullptr;
    if (bytes) nvrtc_detail::check_cuda(cudaMalloc(&p, bytes), "cudaMalloc");
    mem_ = std::shared_ptr<void>(p, [](void* q) {
      if (q) cudaFree(q);
    });
  }
  static device_array from_host(const runtime_tensor& h) {
    device_array d(h.type(), h.extents());
    if (d.byte_size())
      nvrtc_detail::check_cuda(cudaMemcpy(d.data(), h.bytes(), d.byte_size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    return d;
  }
  runtime_tensor to_host() const {
    runtime_tensor h(type_, extents_);
    if (h.byte_size())
      nvrtc_detail::check_cuda(cudaMemcpy(h.bytes(), data(), h.byte_size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
    return h;
  }
  dtype type() const noexcept { return type_; }
  const runtime_extents& extents() const noexcept { return extents_; }
  std::size_t size() const noexcept { return element_count(extents_); }
  std::size_t byte_size() const noexcept { return size() * dtype_size(type_); }
  void* data() const noexcept { return mem_.get(); }

 private:
  dtype type_ = dtype::f32;
  runtime_extents extents_;
  std::shared_ptr<void> mem_;
};

// A value for an input (or a parameter, replacing its embedded value): host memory (uploaded during
// the run) or device memory (read in place; it must stay valid during the run).
class graph_feed {
 public:
  graph_feed(runtime_tensor host) : host_(std::move(host)) {}  // NOLINT: implicit by design
  graph_feed(device_array d) : type_(d.type()), extents_(d.extents()), ptr_(d.data()), keep_(std::move(d)) {}  // NOLINT
  graph_feed(const void* device_pointer, dtype type, runtime_extents extents)
      : type_(type), extents_(std::move(extents)), ptr_(device_pointer) {}
  template <class T, class S>
  graph_feed(const device_tensor<T, S>& d)  // NOLINT
      : type_(dtype_v<T>), extents_(d.extents().begin(), d.extents().end()), ptr_(d.data()) {}

  bool on_host() const noexcept { return host_.has_value(); }
  dtype type() const noexcept { return host_ ? host_->type() : type_; }
  runtime_extents extents() const { return host_ ? host_->extents() : extents_; }
  const runtime_tensor& host() const { return *host_; }
  const void* device_pointer() const noexcept { return ptr_; }

 private:
  std::optional<runtime_tensor> host_;
  dtype type_ = dtype::f32;
  runtime_extents extents_;
  const void* ptr_ = nullptr;
  std::optional<device_array> keep_;
};
using graph_feeds = std::map<std::string, graph_feed, std::less<>>;

// A leaf's dtype and extents, for planning without values (graph_runner::kernels).
struct value_spec {
  dtype type;
  runtime_extents extents;
};
using input_specs = std::map<std::string, value_spec, std::less<>>;

}  // namespace symflow::cuda
