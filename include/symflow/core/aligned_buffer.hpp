#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace symflow {

inline constexpr std::size_t storage_alignment = 64;  // a cache line, and a full AVX-512 register

// Owning, 64-byte-aligned, uninitialised-on-request storage for trivially copyable elements.
// Allocation goes through aligned operator new so that allocation counters see it.
template <class T>
class aligned_buffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  aligned_buffer() = default;
  explicit aligned_buffer(std::size_t n) : size_(n) {
    if (n) data_ = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{storage_alignment}));
  }
  aligned_buffer(const aligned_buffer& other) : aligned_buffer(other.size_) {
    if (size_) std::memcpy(data_, other.data_, size_ * sizeof(T));
  }
  aligned_buffer(aligned_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  aligned_buffer& operator=(aligned_buffer other) noexcept {
    swap(other);
    return *this;
  }
  ~aligned_buffer() { release(); }

  void swap(aligned_buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  void release() noexcept {
    if (data_) ::operator delete(data_, std::align_val_t{storage_alignment});
    data_ = nullptr;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace symflow
