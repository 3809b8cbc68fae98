#pragma once
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../../core/aligned_buffer.hpp"
#include "../../core/params.hpp"
#include "../../expr/leaves.hpp"

namespace symflow::cpu {

template <class S>
inline constexpr bool is_params_v = std::is_same_v<std::remove_cvref_t<S>, params>;

// What one evaluation reads (feeds and at most one parameter store) and the scratch memory it
// owns for materialised intermediates. Lives for the duration of one eval call.
template <class... Sources>
struct eval_context {
  static_assert(((is_feed_binding_v<Sources> || is_params_v<Sources>) && ...),
                "symflow: eval takes an expression followed by feeds (x = tensor) and optionally a params store");
  static_assert((std::size_t(is_params_v<Sources>) + ... + 0) <= 1, "symflow: pass at most one params store");

  std::tuple<const Sources&...> sources;
  std::vector<aligned_buffer<unsigned char>> workspace;

  explicit eval_context(const Sources&... s) : sources(s...) {}

  template <class T>
  T* allocate(std::size_t count) {
    workspace.emplace_back(count * sizeof(T));
    return reinterpret_cast<T*>(workspace.back().data());
  }

  static constexpr std::size_t npos = std::size_t(-1);

  template <fixed_string Name>
  static consteval std::size_t feed_index() {
    std::size_t found = npos, i = 0;
    ((found = (found == npos && feed_matches<Name, Sources>()) ? i : found, ++i), ...);
    return found;
  }
  static consteval std::size_t params_index() {
    std::size_t found = npos, i = 0;
    ((found = (found == npos && is_params_v<Sources>) ? i : found, ++i), ...);
    return found;
  }

 private:
  template <fixed_string Name, class S>
  static consteval bool feed_matches() {
    if constexpr (is_feed_binding_v<S>) return S::name == Name;
    else return false;
  }
};

// Conditions of the static_asserts on feeds: their template arguments name the leaf.
template <class Leaf, bool Found>
struct every_placeholder_is_fed : std::bool_constant<Found> {};
template <class Leaf, bool Found>
struct every_variable_has_a_value : std::bool_constant<Found> {};
template <class Leaf, class FedType>
struct fed_dtype_matches_leaf : std::bool_constant<std::is_same_v<typename Leaf::value_type, FedType>> {};
template <class Leaf, std::size_t FedRank>
struct fed_rank_matches_leaf : std::bool_constant<Leaf::rank == FedRank> {};

}  // namespace symflow::cpu
