#pragma once
#include <atomic>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

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
  operand_list(Tuple operands) : block_(new block) {
    block_->values = std::move(operands);
  }
  operand_list(const operand_list& other) noexcept : block_(other.block_) {
    if (block_) block_->references.fetch_add(1, std::memory_order_relaxed);
  }
  operand_list(operand_list&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  operand_list& operator=(operand_list other) noexcept {
    std::swap(block_, other.block_);
    return *this;
  }
  ~operand_list() {
    if (block_ && block_->references.fetch_sub(1, std::memory_order_acq_rel) == 1) delete block_;
  }

  const tuple_type& get() const { return block_->values; }
  const void* identity() const { return block_; }

  // From the operands themselves (see tuple_of for why not through a tuple's constructor).
  static operand_list of(const Args&... operands) {
    operand_list list;
    list.block_ = new block;
    assign_elements(list.block_->values, operands...);
    return list;
  }

 private:
  struct block {
    std::atomic<std::size_t> references{1};
    tuple_type values;
  };
  block* block_ = nullptr;
};

template <class... A>
operand_list<A...> operands_of_values(const A&... operands) {
  return operand_list<A...>::of(operands...);
}

}  // namespace symflow
