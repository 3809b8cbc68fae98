#pragma once
// Large storage blocks kept after their tensor is gone, for the next tensor of about the same size.
//
// A training loop allocates the same tensors every step: gradients, outputs, a program's results.
// Blocks of this size (64 KiB and more) sit at the top of malloc's heap or in their own mappings,
// so freeing them hands their pages back to the system and the next step's first write to each
// page faults: in the 4-layer LN+GELU MLP's step (bench/mlp_ln_gelu) the faults and the
// allocator took a tenth of the time. Kept blocks come back with their pages mapped.
//
// Sizes are rounded up to a size class (eight classes per power of two, at most 12.5% unused) and
// a request takes a block of exactly its class. The cache is process-wide, guarded by a mutex
// (blocks this large are allocated rarely enough), and bounded: at most max_blocks blocks and
// capacity() bytes, 256 MiB unless the environment sets SYMFLOW_BLOCK_CACHE_BYTES or the program
// calls set_block_cache_capacity; the oldest block goes first. Capacity 0 keeps nothing. Under
// AddressSanitizer the default is 0, so a use after free of a tensor's storage is still caught.
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define SYMFLOW_BLOCK_CACHE_DEFAULT_BYTES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SYMFLOW_BLOCK_CACHE_DEFAULT_BYTES 0
#endif
#endif
#ifndef SYMFLOW_BLOCK_CACHE_DEFAULT_BYTES
#define SYMFLOW_BLOCK_CACHE_DEFAULT_BYTES (std::size_t(256) << 20)
#endif

namespace symflow {

inline constexpr std::size_t storage_alignment = 64;  // a cache line, and a full AVX-512 register

namespace detail {

class block_cache {
 public:
  static constexpr std::size_t smallest_kept = std::size_t(64) << 10;  // below: malloc's bins do well
  static constexpr std::size_t max_blocks = 64;

  // The bytes a block for `bytes` is allocated with: below smallest_kept, `bytes` itself.
  static constexpr std::size_t size_class(std::size_t bytes) noexcept {
    if (bytes < smallest_kept) return bytes;
    std::size_t top = smallest_kept;
    while (top <= bytes / 2) top *= 2;  // the largest power of two <= bytes
    const std::size_t step = top / 8;
    return bytes > std::size_t(-1) - step ? bytes : (bytes + step - 1) / step * step;
  }

  // A kept block of exactly `class_bytes`, or nullptr.
  void* take(std::size_t class_bytes) noexcept {
    std::lock_guard lock(mutex_);
    for (std::size_t i = blocks_.size(); i-- > 0;)
      if (blocks_[i].bytes == class_bytes) {
        void* p = blocks_[i].data;
        blocks_.erase(blocks_.begin() + std::ptrdiff_t(i));
        held_ -= class_bytes;
        return p;
      }
    return nullptr;
  }
  // Keeps the block (allocated with class_bytes) if it fits, else frees it.
  void give(void* p, std::size_t class_bytes) noexcept {
    {
      std::lock_guard lock(mutex_);
      if (class_bytes <= capacity_) {
        try {
          evict_for(class_bytes);
          blocks_.push_back({p, class_bytes});
          held_ += class_bytes;
          return;
        } catch (...) {  // no room for the entry: free the block instead
        }
      }
    }
    free_block(p);
  }

  std::size_t capacity() const noexcept {
    std::lock_guard lock(mutex_);
    return capacity_;
  }
  std::size_t held_bytes() const noexcept {
    std::lock_guard lock(mutex_);
    return held_;
  }
  void set_capacity(std::size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    capacity_ = bytes;
    evict_for(0);
  }

  static void* allocate(std::size_t bytes) { return ::operator new(bytes, std::align_val_t{storage_alignment}); }
  static void free_block(void* p) noexcept { ::operator delete(p, std::align_val_t{storage_alignment}); }

 private:
  struct block {
    void* data;
    std::size_t bytes;
  };
  // Frees the oldest blocks until `incoming` more bytes fit (caller holds the mutex).
  void evict_for(std::size_t incoming) noexcept {
    std::size_t drop = 0;
    while (drop < blocks_.size() &&
           (blocks_.size() - drop + (incoming ? 1 : 0) > max_blocks || held_ + incoming > capacity_)) {
      held_ -= blocks_[drop].bytes;
      free_block(blocks_[drop].data);
      ++drop;
    }
    blocks_.erase(blocks_.begin(), blocks_.begin() + std::ptrdiff_t(drop));
  }

  static std::size_t initial_capacity() noexcept {
    if (const char* v = std::getenv("SYMFLOW_BLOCK_CACHE_BYTES"); v && *v) {
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v, &end, 10);
      if (end && *end == '\0') return std::size_t(n);
    }
    return SYMFLOW_BLOCK_CACHE_DEFAULT_BYTES;
  }

  mutable std::mutex mutex_;
  std::vector<block> blocks_;  // oldest first
  std::size_t held_ = 0;
  std::size_t capacity_ = initial_capacity();
};

// Never destroyed: tensors in other static objects may be freed after it would be.
inline block_cache& process_block_cache() noexcept {
  static block_cache* cache = new block_cache;
  return *cache;
}

}  // namespace detail

// How many bytes of freed tensor storage symflow keeps for reuse (core/block_cache.hpp); 0 turns the
// cache off and frees what it holds.
inline void set_block_cache_capacity(std::size_t bytes) noexcept { detail::process_block_cache().set_capacity(bytes); }
inline std::size_t block_cache_capacity() noexcept { return detail::process_block_cache().capacity(); }
// Bytes held now, in blocks no tensor uses.
inline std::size_t block_cache_held_bytes() noexcept { return detail::process_block_cache().held_bytes(); }
// Frees every kept block (the capacity stays).
inline void release_cached_blocks() noexcept {
  auto& cache = detail::process_block_cache();
  const std::size_t c = cache.capacity();
  cache.set_capacity(0);
  cache.set_capacity(c);
}

}  // namespace symflow
