#pragma once
// How the placement log and the profile name what an evaluator was built from: a node's scoped
// label, a result's dtype and extents, and a type-erased reference to the symbolic node, formatted
// only when the log asks (evaluators carry two pointers, never strings).
#include <cstddef>
#include <string>

#include <symflow/core/tensor.hpp>
#include <symflow/expr/node.hpp>
#include <symflow/expr/to_string.hpp>

namespace symflow::cuda {
namespace detail {

// "dense1/relu", "log_softmax/sum{axes=[1], keepdims}", "x": a node as the placement log names it.
template <expression E>
std::string node_label(const E& e) {
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) {
    return e.info.scoped_name(E::name.view());
  } else if constexpr (E::kind == node_kind::constant) {
    return e.info.scoped_name("constant");
  } else if constexpr (E::kind == node_kind::literal) {
    return symflow::detail::literal_string(e.value);
  } else {
    std::string s = e.info.scoped_name(E::op_name);
    const std::string attributes = symflow::detail::attribute_string(e);
    if (!attributes.empty()) s += "{" + attributes + "}";
    return s;
  }
}

// "f32[256,1024]": a result as the placement log shows it.
template <class T, std::size_t R>
std::string value_type_string(const extents_t<R>& e) {
  return std::string(dtype_name(dtype_v<T>)) + format_extents(e);
}

// The symbolic node an evaluator was built from, type-erased: two pointers per evaluator, formatted
// only when the placement log asks.
struct node_ref {
  const void* node = nullptr;
  std::string (*label)(const void*) = nullptr;
  std::string text() const { return label ? label(node) : std::string("?"); }
};
template <expression E>
node_ref ref_of(const E& e) {
  return {&e, [](const void* p) { return node_label(*static_cast<const E*>(p)); }};
}

}  // namespace detail
}  // namespace symflow::cuda
