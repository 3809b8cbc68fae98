#pragma once
#include <array>
#include <cstdint>
#include "../core/source_site.hpp"
#include <string>
#include <string_view>
#include <type_traits>

namespace symflow {

// What every node remembers about where it was built: the name scopes around it and the source
// location of the user code that wrote it. Fixed size and allocation-free, so building an expression
// stays free of heap work; scope names must be string literals (they are stored as pointers).
struct node_info {
  static constexpr std::size_t max_scope_depth = 8;
  std::array<const char*, max_scope_depth> scopes{};
  std::uint8_t depth = 0;
  source_site where{};

  bool has_location() const { return where.line() != 0; }

  // "dense1/relu" for an op named relu built inside scope("dense1", ...).
  std::string scoped_name(std::string_view own_name) const {
    std::string out;
    for (std::size_t i = 0; i < depth; ++i) {
      out += scopes[i];
      out += '/';
    }
    out += own_name;
    return out;
  }
  std::string location_string() const {
    // Says how to get a line: the node was written with an operator (+, *, ...), which cannot take
    // a source location, outside any scope(); a scope around it lends it the scope's line.
    if (!has_location()) return "no source line: written with an operator outside any scope()";
    return std::string(where.file_name()) + ":" + std::to_string(where.line());
  }
};
// (Op nodes rely on it: see operand_list.)
static_assert(std::is_trivially_destructible_v<node_info>);

namespace detail {
struct scope_stack {
  std::array<const char*, node_info::max_scope_depth> names{};
  std::array<source_site, node_info::max_scope_depth> where{};
  std::uint8_t depth = 0;
};
inline scope_stack& current_scopes() {
  thread_local scope_stack stack;
  return stack;
}
}  // namespace detail

// Records the scopes active on this thread. Operators (+, *, ...) cannot take a source_site
// argument in C++, so nodes built by them carry the location of the innermost scope() instead.
inline node_info capture_node_info(source_site where) {
  const auto& stack = detail::current_scopes();
  node_info info;
  info.scopes = stack.names;
  info.depth = stack.depth;
  info.where = where;
  if (where.line() == 0 && stack.depth > 0) info.where = stack.where[stack.depth - 1];
  return info;
}

}  // namespace symflow
