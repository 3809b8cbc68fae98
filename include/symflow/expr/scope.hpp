#pragma once
#include <utility>

#include "../core/error.hpp"
#include "node_info.hpp"

namespace symflow {

// RAII form: every node built while a name_scope lives gets its name prefixed.
class name_scope {
 public:
  template <std::size_t N>
  explicit name_scope(const char (&name)[N], source_site where = source_site::current()) {
    auto& stack = detail::current_scopes();
    if (stack.depth == node_info::max_scope_depth)
      throw error("scope: name scopes nest at most " + std::to_string(node_info::max_scope_depth) +
                  " deep (entering '" + std::string(name) + "')");
    stack.names[stack.depth] = name;
    stack.where[stack.depth] = where;
    ++stack.depth;
  }
  ~name_scope() { --detail::current_scopes().depth; }
  name_scope(const name_scope&) = delete;
  name_scope& operator=(const name_scope&) = delete;
};

// scope("dense1", [&] { return relu(matmul(x, W) + b); }) names the nodes built inside dense1/...
template <std::size_t N, class Build>
auto scope(const char (&name)[N], Build&& build,
           source_site where = source_site::current()) {
  name_scope guard(name, where);
  return std::forward<Build>(build)();
}

}  // namespace symflow
