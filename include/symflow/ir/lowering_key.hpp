#pragma once
// What to_graph (to_graph.hpp) reads from an expression's values rather than from its type, as a
// key: two expressions of one type whose keys are equal lower to equal graphs. A training step that
// builds its loss afresh every iteration (as written naturally) rebuilds objects of the same type
// with the same values; the gradient's program route (runtime/program_lookup.hpp) compares this
// key with the last step's instead of lowering the loss again (a few microseconds against tens).
//
// For each node object of a walk, the key records whether an earlier one had its identity (and
// which), and what graph_lowering::lower_new reads from it, branch for branch: the scopes and
// source line its graph node would carry, literal values, op attributes (visit_attributes), the
// index of a program output, and the addresses of constants' tensors and of programs. Those
// objects are immutable and held as weak references: an equal address names the same object while
// that object lives (matches() checks they all do). Recording more than the lowering reads only
// costs a miss; a node whose graph form the key cannot vouch for (an op that builds its own
// attributes, a node with no graph form) makes the key unusable, and to_graph then always runs.
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "../expr/leaves.hpp"
#include "../expr/node.hpp"
#include "graph.hpp"
#include "to_graph.hpp"

namespace symflow::detail {

struct lowering_key {
  std::vector<std::uint64_t> words;
  std::vector<std::weak_ptr<const void>> objects;  // whose addresses are in words
  bool usable = true;

  // Equal words, and every object this key names still alive (so no other object has its address).
  bool matches(const lowering_key& fresh) const {
    if (!usable || !fresh.usable || words != fresh.words) return false;
    for (const auto& o : objects)
      if (o.expired()) return false;
    return true;
  }
};

// Records one walk over an expression into a key. The walk is its caller's (the program route's
// leaf search, runtime/program_lookup.hpp, which visits every node object anyway): for each node
// object it calls enter() with the node's identity and, unless enter() says an earlier object had
// it, node() and then the node's operands (an accumulation's terms), in order. Walking more
// operands than the lowering does (all of a program output's) only records more.
class lowering_key_recorder {
 public:
  explicit lowering_key_recorder(lowering_key& key) : key_(key) {
    key.words.clear();
    key.objects.clear();
    key.usable = true;
  }

  // False when an earlier node object had this identity (its operands were walked then).
  bool enter(const void* id) {
    if (!id) return true;
    if (const std::uint64_t* ordinal = find(id)) {
      add(seen, *ordinal);
      return false;
    }
    add(fresh);
    remember(id);
    return true;
  }

  // What lowering the node itself reads, branch for branch with graph_lowering::lower_new (both
  // take the branch from lowering_form_of). Inlined into the walk's function for the node's type:
  // a function of its own per node type would add its name, which spells the model below the
  // node, to the object file.
  template <expression E>
  [[gnu::always_inline]] void node(const E& e) {
    constexpr lowering_form form = lowering_form_of<E>();
    if constexpr (form == lowering_form::leaf) {
      add_info(e.info);  // the leaf's scope and location (name and type are E's)
    } else if constexpr (form == lowering_form::constant) {
      add_object(std::weak_ptr<const void>(e.value), e.value.get());
      add_info(e.info);
    } else if constexpr (form == lowering_form::literal) {
      add_info(e.info);
      if constexpr (!is_static_literal_v<E>) add_number(e.value);
    } else if constexpr (form == lowering_form::as_operand) {
      // lowered as its operand, which the walk records
    } else if constexpr (form == lowering_form::program) {
      add_object(std::weak_ptr<const void>(e.op.program), e.op.program.get());
      if constexpr (requires { e.op.index; }) add(value, std::uint64_t(e.op.index));
    } else if constexpr (form == lowering_form::own_attributes || form == lowering_form::no_graph_form) {
      key_.usable = false;  // a sub-graph the op makes itself, or a node to_graph refuses
    } else if constexpr (form == lowering_form::accumulation) {
      add(items, std::uint64_t(e.items().size()));
      add_info(e.info);
    } else {
      add_info(e.info);
      // The lowering's own collection, into storage kept from node to node.
      attributes_.clear();
      collect_op_attributes(e, attributes_);
      if (!attributes_.empty()) add_attributes();
    }
  }

 private:
  // Tags keep records of different branches apart.
  enum tag : std::uint64_t { seen = 1, fresh, info, text, object, value, attribute, items };


  void add(std::uint64_t w) { key_.words.push_back(w); }
  void add(tag t, std::uint64_t w) {
    add(std::uint64_t(t));
    add(w);
  }
  void add(tag t) { add(std::uint64_t(t)); }
  void add_text(std::string_view s) {
    add(text, std::uint64_t(s.size()));
    for (std::size_t i = 0; i < s.size(); i += 8) {
      std::uint64_t w = 0;
      std::memcpy(&w, s.data() + i, std::min<std::size_t>(8, s.size() - i));
      add(w);
    }
  }
  void add_info(const node_info& i) {
    add(info, std::uint64_t(i.depth) << 32 | i.where.line());
    for (std::size_t d = 0; d < i.depth; ++d) add_text(i.scopes[d]);
    // The file name is usually one static string for many nodes: its text once per walk.
    const char* file = i.where.file_name();
    if (file == last_file_) {
      add(0);
    } else {
      last_file_ = file;
      add(1);
      add_text(file ? std::string_view(file) : std::string_view());
    }
  }
  template <class T>
  void add_number(T v) {
    if constexpr (std::is_same_v<T, float>) add(value, std::bit_cast<std::uint32_t>(v));
    else if constexpr (std::is_same_v<T, double>) add(value, std::bit_cast<std::uint64_t>(v));
    else add(value, std::uint64_t(v));
  }
  // Out of line: one copy, not one inlined into the walk per node type.
  [[gnu::noinline]] void add_attributes() {
    for (const auto& a : attributes_) add_attribute(a);
  }
  void add_attribute(const graph_attribute& a) {
    add(attribute, std::uint64_t(a.value.index()));
    add_text(a.key);
    std::visit(
        [&](const auto& x) {
          using X = std::remove_cvref_t<decltype(x)>;
          if constexpr (std::is_same_v<X, double>) {
            add(std::bit_cast<std::uint64_t>(x));
          } else if constexpr (std::is_same_v<X, bool> || std::is_same_v<X, std::int64_t>) {
            add(std::uint64_t(x));
          } else if constexpr (std::is_same_v<X, std::string>) {
            add_text(x);
          } else if constexpr (std::is_same_v<X, std::vector<std::int64_t>>) {
            add(std::uint64_t(x.size()));
            for (auto v : x) add(std::uint64_t(v));
          } else {
            key_.usable = false;  // a sub-graph
          }
        },
        a.value);
  }
  void add_object(std::weak_ptr<const void> o, const void* address) {
    add(object, std::uint64_t(reinterpret_cast<std::uintptr_t>(address)));
    key_.objects.push_back(std::move(o));
  }

  // Node identities met so far, by the order they were met in (an open-addressing table).
  const std::uint64_t* find(const void* id) const {
    if (table_.empty()) return nullptr;
    for (std::size_t i = slot(id);; i = (i + 1) & (table_.size() - 1)) {
      if (!table_[i].id) return nullptr;
      if (table_[i].id == id) return &table_[i].ordinal;
    }
  }
  void remember(const void* id) {
    if (2 * (count_ + 1) > table_.size()) grow();
    std::size_t i = slot(id);
    while (table_[i].id) i = (i + 1) & (table_.size() - 1);
    table_[i] = {id, count_++};
  }
  std::size_t slot(const void* id) const {
    return std::size_t((std::uint64_t(reinterpret_cast<std::uintptr_t>(id)) * 0x9e3779b97f4a7c15ULL) >> 20) &
           (table_.size() - 1);
  }
  void grow() {
    std::vector<entry> old = std::move(table_);
    table_.assign(old.empty() ? 64 : 2 * old.size(), entry{});
    for (const auto& e : old)
      if (e.id) {
        std::size_t i = slot(e.id);
        while (table_[i].id) i = (i + 1) & (table_.size() - 1);
        table_[i] = e;
      }
  }
  struct entry {
    const void* id = nullptr;
    std::uint64_t ordinal = 0;
  };

  lowering_key& key_;
  std::vector<graph_attribute> attributes_;
  std::vector<entry> table_;
  std::uint64_t count_ = 0;
  const char* last_file_ = nullptr;
};

}  // namespace symflow::detail
