#pragma once
#include <memory>
#include <tuple>
#include <type_traits>

namespace symflow {

// The operands of an op node, held once on the heap and shared by every copy of the node. Copying
// an expression is then a pointer copy however large the model below it is, and `auto h = ...;`
// used twice refers to one object: the address of the operand tuple is the node's identity
// (node_identity), which evaluators, the gradient and to_graph use to visit a shared node once.
template <class... Args>
class operand_list {
 public:
  using tuple_type = std::tuple<Args...>;
  operand_list() = default;
  // From a tuple (aggregate initialisation of nodes passes one).
  operand_list(tuple_type operands) : shared_(std::make_shared<const tuple_type>(std::move(operands))) {}
  const tuple_type& get() const { return *shared_; }
  const void* identity() const { return shared_.get(); }

 private:
  std::shared_ptr<const tuple_type> shared_;
};

}  // namespace symflow
