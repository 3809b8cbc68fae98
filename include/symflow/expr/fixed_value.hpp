#pragma once
// Values known at compile time, as attributes of derivative rules (expr/derivative_rule.hpp): on
// expression types an op's attributes are template arguments, and a rule computes new ones from
// them; fixed<V> carries such a value in its type so that it can become a template argument again.
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace symflow {

// A value known at compile time.
template <auto V>
struct fixed {
  static constexpr auto value = V;
};
template <class T>
inline constexpr bool is_fixed_v = false;
template <auto V>
inline constexpr bool is_fixed_v<fixed<V>> = true;

// A list of integers that can be a template argument (std::vector cannot): attribute lists such as
// a permutation or reduced axes, read from an op at compile time.
struct integer_list {
  std::array<std::int64_t, 16> items{};
  std::size_t count = 0;
  constexpr std::size_t size() const { return count; }
  constexpr std::int64_t operator[](std::size_t i) const { return items[i]; }
  constexpr std::int64_t& operator[](std::size_t i) { return items[i]; }
  constexpr bool operator==(const integer_list&) const = default;
  // At run time a rule's lists are vectors (the graph attributes' form).
  operator std::vector<std::int64_t>() const { return {items.begin(), items.begin() + std::ptrdiff_t(count)}; }
};

}  // namespace symflow
