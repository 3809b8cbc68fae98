#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "block_cache.hpp"

namespace symflow {

// Owning, 64-byte-aligned, uninitialised storage for trivially copyable elements. Allocation goes
// through aligned operator new so that allocation counters see it; blocks of 64 KiB and more are
// allocated in size classes and kept after release for the next buffer of their class
// (block_cache.hpp).
template <class T>
class aligned_buffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  aligned_buffer() = default;
  explicit aligned_buffer(std::size_t n) : size_(n) {
    if (!n) return;
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = detail::block_cache::size_class(n * sizeof(T));
    void* p = bytes >= detail::block_cache::smallest_kept ? detail::process_block_cache().take(bytes) : nullptr;
    data_ = static_cast<T*>(p ? p : detail::block_cache::allocate(bytes));
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
    if (!data_) return;
    const std::size_t bytes = detail::block_cache::size_class(size_ * sizeof(T));
    if (bytes >= detail::block_cache::smallest_kept) detail::process_block_cache().give(data_, bytes);
    else detail::block_cache::free_block(data_);
    data_ = nullptr;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace symflow
