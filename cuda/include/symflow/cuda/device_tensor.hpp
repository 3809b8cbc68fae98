#pragma once
// Tensors in device memory: an owning device_tensor (RAII, stream-ordered allocation), a strided
// non-owning device_view, host<->device copies, and device_params (variables kept on the device).
#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <symflow/core/params.hpp>
#include <symflow/core/tensor.hpp>

#include "runtime.hpp"

namespace symflow::cuda {

// A non-owning, possibly strided window onto device memory (the device twin of tensor_view).
template <class T, shape_spec S>
class device_view {
 public:
  using value_type = std::remove_const_t<T>;
  using shape_type = S;
  static constexpr std::size_t rank = S::rank;

  device_view() = default;
  device_view(T* data, const extents_t<rank>& extents)
      : device_view(data, extents, row_major_strides<rank>(extents)) {}
  device_view(T* data, const extents_t<rank>& extents, const extents_t<rank>& strides)
      : data_(data), extents_(extents), strides_(strides) {
    if (!extents_match<S>(extents_))
      throw shape_error("device_view: extents " + format_extents(extents_) + " do not fit the static shape " +
                        shape_string<S>());
  }
  template <class U, shape_spec S2>
    requires(std::is_const_v<T> && std::is_same_v<std::remove_const_t<T>, U> && S2::rank == rank)
  device_view(const device_view<U, S2>& other) : device_view(other.data(), other.extents(), other.strides()) {}

  T* data() const noexcept { return data_; }
  const extents_t<rank>& extents() const noexcept { return extents_; }
  std::size_t extent(std::size_t axis) const noexcept { return extents_[axis]; }
  const extents_t<rank>& strides() const noexcept { return strides_; }
  std::size_t size() const noexcept { return element_count<rank>(extents_); }
  bool is_contiguous() const noexcept {
    std::size_t expect = 1;
    for (std::size_t i = rank; i-- > 0;) {
      if (extents_[i] != 1 && strides_[i] != expect) return false;
      expect *= extents_[i];
    }
    return true;
  }

 private:
  T* data_ = nullptr;
  extents_t<rank> extents_{};
  extents_t<rank> strides_{};
};

// Owning, dense, row-major device storage. Allocated with cudaMallocAsync on a stream and freed
// with cudaFreeAsync on the same stream, which must therefore outlive the tensor. Move-only:
// copies are explicit (clone, to_host).
template <class T, shape_spec S>
class device_tensor {
  static_assert(is_compute_dtype_v<T>,
                "symflow: device tensors hold float, double, int32_t, int64_t or bool (storage types such as "
                "Eigen::half are converted on the host: convert<float>(t))");

 public:
  using value_type = T;
  using shape_type = S;
  static constexpr std::size_t rank = S::rank;

  device_tensor() {
    if constexpr (S::is_static) extents_ = S::extents;
    if constexpr (S::is_static) data_ = static_cast<T*>(detail::device_allocate(bytes(), nullptr));
  }
  // Uninitialised storage (an evaluation writes every element).
  explicit device_tensor(const extents_t<rank>& extents, stream_ref s = {}) : extents_(checked(extents)), stream_(s) {
    data_ = static_cast<T*>(detail::device_allocate(bytes(), stream_));
  }
  device_tensor(const device_tensor&) = delete;
  device_tensor& operator=(const device_tensor&) = delete;
  device_tensor(device_tensor&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), extents_(o.extents_), stream_(o.stream_) {}
  device_tensor& operator=(device_tensor&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      extents_ = o.extents_;
      stream_ = o.stream_;
    }
    return *this;
  }
  ~device_tensor() { release(); }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  const extents_t<rank>& extents() const noexcept { return extents_; }
  std::size_t extent(std::size_t axis) const noexcept { return extents_[axis]; }
  extents_t<rank> strides() const noexcept { return row_major_strides<rank>(extents_); }
  std::size_t size() const noexcept { return element_count<rank>(extents_); }
  std::size_t bytes() const noexcept { return size() * sizeof(T); }
  stream_ref stream() const noexcept { return stream_; }

  device_view<T, S> view() noexcept { return {data_, extents_}; }
  device_view<const T, S> view() const noexcept { return {data_, extents_}; }
  operator device_view<T, S>() noexcept { return view(); }
  operator device_view<const T, S>() const noexcept { return view(); }

  // Host -> device, asynchronous on `s` (from pageable memory the call returns once the data is staged).
  void copy_from_host(const tensor<T, S>& host, stream_ref s = {}) {
    if (host.extents() != extents_)
      throw shape_error("device_tensor::copy_from_host: extents " + format_extents(host.extents()) + " differ from " +
                        format_extents(extents_));
    if (bytes()) SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(data_, host.data(), bytes(), cudaMemcpyHostToDevice, s));
  }
  // Device -> host, asynchronous on `s`: synchronise the stream before reading `host`.
  void copy_to_host_async(tensor<T, S>& host, stream_ref s = {}) const {
    if (host.extents() != extents_) host = tensor<T, S>(extents_, uninitialized);
    if (bytes()) SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(host.data(), data_, bytes(), cudaMemcpyDeviceToHost, s));
  }
  // Device -> host, waiting for the copy (and all work queued before it on `s`).
  tensor<T, S> to_host(stream_ref s = {}) const {
    tensor<T, S> host(extents_, uninitialized);
    copy_to_host_async(host, s);
    s.synchronize();
    return host;
  }
  device_tensor clone(stream_ref s = {}) const {
    device_tensor out(extents_, s);
    if (bytes()) SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(out.data_, data_, bytes(), cudaMemcpyDeviceToDevice, s));
    return out;
  }
  static device_tensor from_host(const tensor<T, S>& host, stream_ref s = {}) {
    device_tensor out(host.extents(), s);
    out.copy_from_host(host, s);
    return out;
  }

 private:
  static extents_t<rank> checked(const extents_t<rank>& e) {
    if (!extents_match<S>(e))
      throw shape_error("device_tensor: extents " + format_extents(e) + " do not fit the static shape " +
                        shape_string<S>());
    return e;
  }
  void release() noexcept {
    detail::device_free(data_, stream_);
    data_ = nullptr;
  }

  T* data_ = nullptr;
  extents_t<rank> extents_{};
  stream_ref stream_{};
};

template <class T>
inline constexpr bool is_device_tensor_v = false;
template <class T, class S>
inline constexpr bool is_device_tensor_v<device_tensor<T, S>> = true;
template <class T>
inline constexpr bool is_device_view_v = false;
template <class T, class S>
inline constexpr bool is_device_view_v<device_view<T, S>> = true;

// Copies a host tensor to a new device tensor (asynchronously on `s`).
template <class T, class S>
device_tensor<T, S> to_device(const tensor<T, S>& host, stream_ref s = {}) {
  return device_tensor<T, S>::from_host(host, s);
}
// Copies a device tensor to a new host tensor (waits for `s`).
template <class T, class S>
tensor<T, S> to_host(const device_tensor<T, S>& dev, stream_ref s = {}) {
  return dev.to_host(s);
}

// Untyped owning device bytes (the storage of device_params).
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(std::size_t bytes, stream_ref s) : bytes_(bytes), stream_(s) {
    data_ = detail::device_allocate(bytes, s);
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), stream_(o.stream_) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      detail::device_free(data_, stream_);
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      stream_ = o.stream_;
    }
    return *this;
  }
  ~device_buffer() { detail::device_free(data_, stream_); }
  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  stream_ref stream_{};
};

// Variables' values kept on the device: the device twin of symflow::params. Typed access checks the
// dtype and extents and names the variable when they differ.
class device_params {
 public:
  struct entry {
    dtype type{};
    std::vector<std::size_t> extents;
    device_buffer bytes;
  };

  template <class T, class S>
  void set(std::string name, const tensor<T, S>& value, stream_ref s = {}) {
    entry e{dtype_v<T>, {value.extents().begin(), value.extents().end()}, device_buffer(value.size() * sizeof(T), s)};
    if (value.size())
      SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(e.bytes.data(), value.data(), value.size() * sizeof(T), cudaMemcpyHostToDevice, s));
    entries_.insert_or_assign(std::move(name), std::move(e));
  }
  template <class T, class S>
  void set(std::string name, const device_tensor<T, S>& value, stream_ref s = {}) {
    entry e{dtype_v<T>, {value.extents().begin(), value.extents().end()}, device_buffer(value.bytes(), s)};
    if (value.size()) SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(e.bytes.data(), value.data(), value.bytes(), cudaMemcpyDeviceToDevice, s));
    entries_.insert_or_assign(std::move(name), std::move(e));
  }
  // Copies every entry of a host store (asynchronously on `s`).
  void upload(const params& host, stream_ref s = {}) {
    for (const std::string& name : host.names()) {
      const params::entry& h = host.at(name);
      const std::size_t n = h.bytes.size();
      entry e{h.type, h.extents, device_buffer(n, s)};
      if (n) SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(e.bytes.data(), h.bytes.data(), n, cudaMemcpyHostToDevice, s));
      entries_.insert_or_assign(name, std::move(e));
    }
  }
  // Copies every entry back into a host store whose entries it replaces (waits for `s`). The host
  // store must already hold an entry of each name (params stores are filled with typed tensors).
  void download(params& host, stream_ref s = {}) const {
    for (const auto& [name, e] : entries_) {
      params::entry& h = host.at(name);
      h.type = e.type;
      h.extents = e.extents;
      h.bytes = aligned_buffer<unsigned char>(e.bytes.bytes());
      if (e.bytes.bytes())
        SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(h.bytes.data(), e.bytes.data(), e.bytes.bytes(), cudaMemcpyDeviceToHost, s));
    }
    s.synchronize();
  }

  bool contains(std::string_view name) const { return entries_.find(name) != entries_.end(); }
  std::size_t size() const { return entries_.size(); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, e] : entries_) out.push_back(name);
    return out;
  }
  const entry& at(std::string_view name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) throw value_error("device_params: no value for variable '" + std::string(name) + "'");
    return it->second;
  }

  template <class T, shape_spec S>
  device_view<T, S> view(std::string_view name) {
    const entry& e = at(name);
    const auto ext = checked_parameter_extents<T, S>("device_params", name, e.type, e.extents);
    return device_view<T, S>(static_cast<T*>(e.bytes.data()), ext);
  }
  template <class T, shape_spec S>
  device_view<const T, S> view(std::string_view name) const {
    return const_cast<device_params*>(this)->view<T, S>(name);
  }

 private:
  std::map<std::string, entry, std::less<>> entries_;
};

}  // namespace symflow::cuda
