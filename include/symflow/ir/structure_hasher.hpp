#pragma once
// A running 64-bit hash of graph pieces (strings, types, locations, attributes): what the plan and
// gradient caches key graphs by (runtime/plan_cache.hpp) and how to_graph finds a node it has
// already built.
#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "graph.hpp"

namespace symflow {

class structure_hasher {
 public:
  void add(std::uint64_t v) {
    // splitmix64's finaliser on the running state
    h_ ^= v + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2);
    h_ = (h_ ^ (h_ >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h_ = (h_ ^ (h_ >> 27)) * 0x94d049bb133111ebULL;
    h_ ^= h_ >> 31;
  }
  void add(std::string_view s) {
    add(std::uint64_t(s.size()));
    add(std::uint64_t(std::hash<std::string_view>{}(s)));
  }
  void add(const std::string& s) { add(std::string_view(s)); }
  void add(const std::vector<std::int64_t>& v) {
    add(std::uint64_t(v.size()));
    for (auto x : v) add(std::uint64_t(x));
  }
  void add(const graph_type& t) {
    add(std::uint64_t(t.type));
    add(t.shape);
  }
  void add(const graph_location& w) {
    add(w.file);
    add(std::uint64_t(w.line));
  }
  void add(const attribute_value& v) {
    add(std::uint64_t(v.index()));
    std::visit(
        [&](const auto& x) {
          using X = std::remove_cvref_t<decltype(x)>;
          if constexpr (std::is_same_v<X, double>) add(std::bit_cast<std::uint64_t>(x));
          else if constexpr (std::is_same_v<X, bool>) add(std::uint64_t(x));
          else if constexpr (std::is_same_v<X, std::int64_t>) add(std::uint64_t(x));
          else if constexpr (std::is_same_v<X, subgraph>) add(*x.body);
          else add(x);
        },
        v);
  }
  // A sub-graph (a control-flow body): its leaves' names and types, its nodes and outputs; not
  // its data, which equality compares.
  void add(const graph& g) {
    for (const auto* leaves : {&g.inputs, &g.parameters}) {
      add(std::uint64_t(leaves->size()));
      for (const auto& l : *leaves) add(l.name), add(l.type);
    }
    add(std::uint64_t(g.constants.size()));
    for (const auto& c : g.constants) add(c.type);
    add(std::uint64_t(g.nodes.size()));
    for (const auto& n : g.nodes) {
      add(n.op);
      add(n.type);
      for (auto i : n.inputs) add(std::uint64_t(i));
      for (const auto& a : n.attributes) add(a.key), add(a.value);
    }
    for (auto o : g.outputs) add(std::uint64_t(o));
  }
  std::uint64_t value() const { return h_; }

 private:
  std::uint64_t h_ = 0x84222325cbf29ce4ULL;
};

}  // namespace symflow
