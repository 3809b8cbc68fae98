#pragma once
#include <tuple>
#include <type_traits>

#include "node.hpp"
#include "rewrite.hpp"

namespace symflow {

// Whether two nodes of one type compute the same value: the type fixes the structure, so what is
// left to compare is runtime data — literal values, constants' storage, op attributes. This is the
// identity used for common-subexpression elimination.
template <class Op>
bool same_op(const Op& a, const Op& b) {
  if constexpr (std::is_empty_v<Op>) return true;
  else if constexpr (requires { a == b; }) return a == b;
  else return false;
}

// same_value behind a type-free signature, for tables of nodes of mixed types. Its address also
// stands for the node type E (distinct functions have distinct addresses): to_graph and the
// evaluation context key nodes by it instead of by typeid, whose type_info object and name string
// would add two symbols per node type, each spelling the whole model below the node.
using same_value_fn = bool (*)(const void*, const void*);
template <expression E>
bool same_value_erased(const void* a, const void* b);

// (Always inlined, and operands compared through same_value_erased: then one function per node
// type is emitted, not two, and none for the fold over operands. Their names spell the model below
// the node, and a deep model's object file is mostly such names.)
template <expression E>
SYMFLOW_INLINE bool same_value(const E& a, const E& b) {
  if (&a == &b) return true;
  // Copies of one node share their operands; a type-determined node's type fixes its value.
  if (node_identity(a) != nullptr && node_identity(a) == node_identity(b)) return true;
  if constexpr (has_operands<E> && is_type_determined<E>()) return true;
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) {
    return true;
  } else if constexpr (E::kind == node_kind::accumulation || E::kind == node_kind::reference) {
    return a.identity() == b.identity();
  } else if constexpr (E::kind == node_kind::constant) {
    return a.value == b.value;
  } else if constexpr (E::kind == node_kind::literal) {
    if constexpr (requires { E::value; } && !requires { &E::value; }) return true;
    else return a.value == b.value;
  } else {
    bool same = true;
    if constexpr (requires { a.op; }) same = same_op(a.op, b.op);
    return same && [&]<std::size_t... I>(std::index_sequence<I...>) SYMFLOW_INLINE_LAMBDA {
      return (same_value_erased<std::tuple_element_t<I, operands_of<E>>>(&std::get<I>(a.args()), &std::get<I>(b.args())) &&
              ...);
    }(std::make_index_sequence<std::tuple_size_v<operands_of<E>>>{});
  }
}

template <expression E>
bool same_value_erased(const void* a, const void* b) {
  return same_value(*static_cast<const E*>(a), *static_cast<const E*>(b));
}

}  // namespace symflow
