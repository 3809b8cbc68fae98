#pragma once
// The named leaves (placeholder and variable types) of one fusion group, each once, as a type list:
// slot K of the kernel's dev::leaf_table is the K-th type, so every occurrence of a leaf in a group
// reads one kernel parameter slot and the compiler loads it once.
#include <cstddef>
#include <type_traits>

namespace symflow::cuda::detail {

template <class... K>
struct key_list {
  static constexpr int size = int(sizeof...(K));
};
template <class List, class K>
struct key_add;
template <class... L, class K>
struct key_add<key_list<L...>, K> {
  using type = std::conditional_t<std::is_void_v<K> || (std::is_same_v<K, L> || ...), key_list<L...>, key_list<L..., K>>;
};
template <class List, class Other>
struct key_merge;
template <class List>
struct key_merge<List, key_list<>> {
  using type = List;
};
template <class List, class K, class... Rest>
struct key_merge<List, key_list<K, Rest...>> {
  using type = typename key_merge<typename key_add<List, K>::type, key_list<Rest...>>::type;
};
template <class K, class List>
struct key_index;
template <class K, class... L>
struct key_index<K, key_list<L...>> {
  static constexpr int value = [] {
    constexpr bool match[] = {std::is_same_v<K, L>..., false};
    for (int i = 0; i < int(sizeof...(L)); ++i)
      if (match[i]) return i;
    return -1;
  }();
};
// Evaluators declare the named leaves of the group part they head as `using keys = key_list<...>`;
// materialised values and literals have none.
template <class H>
struct group_keys {
  using type = key_list<>;
};
template <class H>
  requires requires { typename H::keys; }
struct group_keys<H> {
  using type = typename H::keys;
};
template <class... Lists>
struct keys_union {
  using type = key_list<>;
};
template <class L, class... Rest>
struct keys_union<L, Rest...> {
  using type = typename key_merge<L, typename keys_union<Rest...>::type>::type;
};
template <class... H>
using merged_keys_t = typename keys_union<typename group_keys<H>::type...>::type;

}  // namespace symflow::cuda::detail
