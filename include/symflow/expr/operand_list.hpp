#pragma once
#include <memory>
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
// an expression is then a pointer copy however large the model below it is, and `auto h = ...;`
// used twice refers to one object: the address of the operand tuple is the node's identity
// (node_identity), which evaluators, the gradient and to_graph use to visit a shared node once.
template <class... Args>
class operand_list {
 public:
  using tuple_type = std::tuple<Args...>;
  operand_list() = default;
  // From a tuple (a template taking exactly the tuple type, so that no conversion is considered).
  template <class Tuple>
    requires std::is_same_v<Tuple, tuple_type>
  operand_list(Tuple operands) : shared_(new tuple_type(std::move(operands))) {}
  const tuple_type& get() const { return *shared_; }
  const void* identity() const { return shared_.get(); }

  // From the operands themselves (see tuple_of for why not through a tuple's constructor).
  static operand_list of(const Args&... operands) {
    auto* tuple = new tuple_type();  // (not make_shared: its allocator-aware construction has the same cost)
    operand_list list;
    list.shared_.reset(tuple);
    assign_elements(*tuple, operands...);
    return list;
  }

 private:
  std::shared_ptr<const tuple_type> shared_;
};

template <class... A>
operand_list<A...> operands_of_values(const A&... operands) {
  return operand_list<A...>::of(operands...);
}

}  // namespace symflow
