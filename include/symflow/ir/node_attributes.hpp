#pragma once
// A graph node's attributes, read by key and kind: the ops' runtime forms (runtime/op_table.hpp) and
// their ONNX forms (io/onnx.hpp) read them through this.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graph.hpp"

namespace symflow {

// A node's attributes as the ops' runtime forms read them; a missing or mistyped attribute names
// the node (the validator has normally refused such a graph already).
class node_attributes {
 public:
  explicit node_attributes(const graph_node& node) : node_(&node) {}
  std::int64_t integer(std::string_view key) const { return get<std::int64_t>(key, "an integer"); }
  std::vector<std::int64_t> integers(std::string_view key) const {
    return get<std::vector<std::int64_t>>(key, "a list of integers");
  }
  bool boolean(std::string_view key) const { return get<bool>(key, "a boolean"); }
  double number(std::string_view key) const {
    const attribute_value* v = node_->attribute(key);
    if (v && std::holds_alternative<std::int64_t>(*v)) return double(std::get<std::int64_t>(*v));
    return get<double>(key, "a number");
  }
  dtype dtype_of(std::string_view key) const {
    const auto name = get<std::string>(key, "a dtype name");
    if (auto d = dtype_from_name(name)) return *d;
    throw graph_error("node '" + node_->name + "': attribute '" + std::string(key) + "' names no dtype: " + name);
  }
  bool has(std::string_view key) const { return node_->attribute(key) != nullptr; }

 private:
  template <class V>
  const V& get(std::string_view key, const char* kind) const {
    const attribute_value* v = node_->attribute(key);
    if (!v || !std::holds_alternative<V>(*v))
      throw graph_error("node '" + node_->name + "' (" + node_->op + "): attribute '" + std::string(key) +
                        "' is missing or not " + kind);
    return std::get<V>(*v);
  }
  const graph_node* node_;
};

}  // namespace symflow
