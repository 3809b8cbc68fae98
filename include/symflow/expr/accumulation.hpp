#pragma once
#include <memory>
#include <string_view>
#include <tuple>
#include <vector>

#include "node.hpp"

namespace symflow {

// The sum of terms of one type whose number is known only at run time: the adjoint of a node is
// the sum of what each of its users sends back, and how many users a node has depends on the
// objects the model was built from (two `0.5f * u` nodes have one type but are two users), not on
// types alone. The terms are shared by copies of the node; their address is its identity.
template <expression Term>
struct accumulation : expression_tag {
  static constexpr node_kind kind = node_kind::accumulation;
  static constexpr std::string_view op_name = "add_n";
  using term_type = Term;
  using value_type = value_type_of<Term>;
  using shape_type = shape_of<Term>;
  static constexpr std::size_t rank = shape_type::rank;
  std::shared_ptr<const std::vector<Term>> terms;
  node_info info;
  const std::vector<Term>& items() const { return *terms; }
  const void* identity() const { return terms.get(); }
};

// Type walks (depends_on, post_order, node counts) see the term type as the one operand type.
template <class Term>
struct operand_types<accumulation<Term>> {
  using type = std::tuple<Term>;
};

template <expression Term>
accumulation<Term> accumulate_terms(std::vector<Term> terms) {
  // (Not make_shared: its allocator-aware construction costs g++ time that grows with the depth of
  // Term's type; see expr/operand_list.hpp.)
  return accumulation<Term>{{}, std::shared_ptr<const std::vector<Term>>(new std::vector<Term>(std::move(terms))), {}};
}

}  // namespace symflow
