#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "../core/config.hpp"

namespace symflow {

// Builds a std::tuple without calling its element-wise constructors: default-constructed, then
// each element assigned. g++ 12 spends time exponential in the depth of a model whose
// subexpressions are shared when it resolves std::tuple's converting constructors over node types
// (a tuple of two pointers to such nodes is enough); default construction and element assignment
// do not have that cost.
template <class... T>
void assign_elements(std::tuple<T...>& t, const T&... values) {
  [&]<std::size_t... I>(std::index_sequence<I...>) { ((std::get<I>(t) = values), ...); }(std::index_sequence_for<T...>{});
}
template <class... T>
std::tuple<T...> tuple_of(const T&... values) {
  std::tuple<T...> t;
  assign_elements(t, values...);
  return t;
}

// The reference count of an operand block, and how to delete the block: the part of
// operand_list that does not depend on the operand types. Copying, destroying and assigning an
// operand_list run this code, one copy for all node types. Templated destructors would instead be
// emitted per node type, three symbols each whose names spell the whole model below the node: a
// deep model's object file was mostly such names.
class operand_block_handle {
 public:
  static constexpr std::size_t max_released = 6;
  struct header {
    std::atomic<std::size_t> references{1};
    // How to delete the block: a function of the block's type; or, where null, release the handles
    // at the offsets `released` lists (the operands' own operand blocks: all that destroying such
    // operands does) and free the memory.
    void (*destroy)(header*) = nullptr;
    std::uint8_t release_count = 0;
    std::array<std::uint16_t, max_released> released{};
  };

  operand_block_handle() = default;
  explicit operand_block_handle(header* block) noexcept : block_(block) {}
  operand_block_handle(const operand_block_handle& other) noexcept : block_(other.block_) {
    if (block_) block_->references.fetch_add(1, std::memory_order_relaxed);
  }
  operand_block_handle(operand_block_handle&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  operand_block_handle& operator=(operand_block_handle other) noexcept {
    std::swap(block_, other.block_);
    return *this;
  }
  ~operand_block_handle() { release(); }

  header* get() const { return block_; }

 private:
  void release() noexcept {
    if (block_ && block_->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if (block_->destroy) block_->destroy(block_);
      else destroy_plain(block_);
    }
  }
  static void destroy_plain(header* h) noexcept {
    for (std::size_t i = 0; i < h->release_count; ++i)
      reinterpret_cast<operand_block_handle*>(reinterpret_cast<unsigned char*>(h) + h->released[i])->release();
    ::operator delete(static_cast<void*>(h));
  }
  header* block_ = nullptr;
};

// Whether destroying an A does no more than release A's operand block: A is trivially
// destructible, or it is an op node that says so (elementwise.hpp, reduction.hpp, structural.hpp:
// their other members are the op, when trivially destructible, and node_info).
template <class A>
constexpr bool only_releases_operands() {
  if constexpr (std::is_trivially_destructible_v<A>) return true;
  else if constexpr (requires { A::destroyed_with_operands; }) return A::destroyed_with_operands;
  else return false;
}

// The operands of an op node, held once on the heap and shared by every copy of the node. Copying
// an expression is then a reference-count increment however large the model below it is, and
// `auto h = ...;` used twice refers to one object: the address of the operand block is the node's
// identity (node_identity), which evaluators, the gradient and to_graph use to visit a shared node
// once. One allocation per node: the count and the operands live in one block (std::make_shared
// would do the same, but its allocator-aware construction costs g++ the time tuple_of avoids).
template <class... Args>
class operand_list {
 public:
  using tuple_type = std::tuple<Args...>;
  operand_list() = default;
  // From a tuple (a template taking exactly the tuple type, so that no conversion is considered).
  template <class Tuple>
    requires std::is_same_v<Tuple, tuple_type>
  operand_list(Tuple operands) : handle_(new_block()) {
    stored()->values = std::move(operands);
  }

  const tuple_type& get() const { return stored()->values; }
  const void* identity() const { return handle_.get(); }
  // (For the block that holds this list: see operand_block_handle::header.)
  const operand_block_handle* handle_address() const { return &handle_; }

  // From the operands themselves (see tuple_of for why not through a tuple's constructor).
  static operand_list of(const Args&... operands) {
    operand_list list;
    list.handle_ = operand_block_handle(new_block());
    assign_elements(list.stored()->values, operands...);
    return list;
  }

 private:
  struct block : operand_block_handle::header {
    tuple_type values;
  };
  // A block of operands that are all released by their handles is deleted by code shared by all
  // node types (destroy_plain); others by this function, one per node type.
  static constexpr bool plain = (only_releases_operands<Args>() && ...) &&
                                sizeof...(Args) <= operand_block_handle::max_released &&
                                alignof(block) <= alignof(std::max_align_t) && sizeof(block) < 65536;
  static void destroy(operand_block_handle::header* h) { delete static_cast<block*>(h); }
  static operand_block_handle::header* new_block() {
    block* b = new block;
    if constexpr (plain) {
      [&]<std::size_t... I>(std::index_sequence<I...>) SYMFLOW_INLINE_LAMBDA {
        (note_release(b, std::get<I>(b->values)), ...);
      }(std::index_sequence_for<Args...>{});
    } else {
      b->destroy = &destroy;
    }
    return b;
  }
  template <class A>
  static void note_release(block* b, const A& operand) {
    if constexpr (!std::is_trivially_destructible_v<A>)
      b->released[b->release_count++] =
          static_cast<std::uint16_t>(reinterpret_cast<const unsigned char*>(operand.operands.handle_address()) -
                                     reinterpret_cast<const unsigned char*>(b));
  }
  block* stored() const { return static_cast<block*>(handle_.get()); }

  operand_block_handle handle_;
};

template <class... A>
operand_list<A...> operands_of_values(const A&... operands) {
  return operand_list<A...>::of(operands...);
}

}  // namespace symflow
