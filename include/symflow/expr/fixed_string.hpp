#pragma once
#include <algorithm>
#include <cstddef>
#include <string_view>

namespace symflow {

// A string usable as a template argument: placeholder and variable names are part of their type.
template <std::size_t N>
struct fixed_string {
  char value[N]{};
  constexpr fixed_string(const char (&text)[N]) { std::copy_n(text, N, value); }
  constexpr fixed_string() = default;
  constexpr std::string_view view() const { return {value, N - 1}; }
  constexpr operator std::string_view() const { return view(); }
  template <std::size_t M>
  constexpr bool operator==(const fixed_string<M>& other) const {
    return view() == other.view();
  }
};

// "dense1" and "W" joined as "dense1/W" at compile time: a layer names its variables after itself.
template <fixed_string Scope, fixed_string Leaf>
inline constexpr auto scoped_name = [] {
  constexpr std::size_t a = Scope.view().size(), b = Leaf.view().size();
  fixed_string<a + b + 2> joined;
  std::copy_n(Scope.value, a, joined.value);
  joined.value[a] = '/';
  std::copy_n(Leaf.value, b, joined.value + a + 1);
  return joined;
}();

}  // namespace symflow
