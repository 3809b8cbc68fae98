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
  constexpr std::string_view view() const { return {value, N - 1}; }
  constexpr operator std::string_view() const { return view(); }
  template <std::size_t M>
  constexpr bool operator==(const fixed_string<M>& other) const {
    return view() == other.view();
  }
};

}  // namespace symflow
