#pragma once
#include <memory>
#include <string_view>
#include <tuple>

#include "node.hpp"

namespace symflow {

// What a reference with key Key stands for: specialised next to whatever makes such references.
template <class Key>
struct reference_target;
template <class Key>
using reference_target_t = typename reference_target<Key>::type;

// A node that stands for another expression object (its target) whose type is not part of the
// reference's own type: the type names only a key, the dtype and the shape. The target's type is
// looked up (reference_target<Key>) when the node is walked or evaluated, not when it is formed.
// This is what keeps a gradient's types small: the term a node's user sends back reads the user's
// adjoint through a reference, so a term's type does not contain the adjoint types of every node
// between it and the loss (those nest as deeply as the model, and g++ compares such types
// structurally in overload resolution, in time exponential in their depth).
// The target is stored once, shared by copies; its address is the node's identity.
template <class Key, class T, class Shape>
struct reference : expression_tag {
  static constexpr node_kind kind = node_kind::reference;
  static constexpr std::string_view op_name = "reference";
  using key_type = Key;
  using value_type = T;
  using shape_type = Shape;
  static constexpr std::size_t rank = Shape::rank;
  std::shared_ptr<const void> target;  // a std::tuple<reference_target_t<Key>>
  node_info info;

  // The target as the node's one operand (type walks and evaluators see through references).
  template <class K = Key>
  const std::tuple<reference_target_t<K>>& args() const {
    return *static_cast<const std::tuple<reference_target_t<K>>*>(target.get());
  }
  const void* identity() const { return target.get(); }
};

template <class Key, class T, class Shape, class Target>
reference<Key, T, Shape> make_reference(Target target) {
  static_assert(std::is_same_v<Target, reference_target_t<Key>>, "symflow: a reference's target has its key's type");
  static_assert(std::is_same_v<shape_of<Target>, Shape> && std::is_same_v<value_type_of<Target>, T>,
                "symflow: a reference has its target's dtype and shape");
  reference<Key, T, Shape> r;
  auto* stored = new std::tuple<Target>();
  std::get<0>(*stored) = std::move(target);
  r.target = std::shared_ptr<const void>(stored);
  return r;
}

}  // namespace symflow
