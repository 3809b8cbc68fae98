#pragma once
#include <cstdint>
#include <sstream>
#include <string>
#include <tuple>

#include "leaves.hpp"
#include "node.hpp"

namespace symflow {

namespace detail {
template <class T>
std::string literal_string(T v) {
  std::ostringstream os;
  if constexpr (std::is_same_v<T, bool>) os << (v ? "true" : "false");
  else os << +v;
  return os.str();
}

template <expression E>
std::string attribute_string(const E& e) {
  if constexpr (E::kind == node_kind::reduction) {
    std::string out;
    bool all = true;
    for (bool m : E::mask) all = all && m;
    if (!all) {
      out = "axes=[";
      bool first = true;
      for (std::size_t i = 0; i < E::mask.size(); ++i)
        if (E::mask[i]) {
          out += (first ? "" : ",") + std::to_string(i);
          first = false;
        }
      out += "]";
    }
    if (E::keep_dims) out += std::string(out.empty() ? "" : ", ") + "keepdims";
    return out;
  } else if constexpr (requires { E::op_type::prints_attributes; }) {
    // Ops whose attributes tell nodes apart in a printout (a slice's range): every attribute
    // the op reports, as key=value in its order (a graph node's attributes print the same way).
    std::string out;
    e.op.visit_attributes([&](std::string_view key, auto value) {
      // Integers print signed, as a graph file stores them (trilu's k = -1 travels as a size_t).
      using V = decltype(value);
      const std::string text = [&] {
        if constexpr (std::is_integral_v<V> && !std::is_same_v<V, bool>) return literal_string(static_cast<std::int64_t>(value));
        else return literal_string(value);
      }();
      out += (out.empty() ? "" : ", ") + std::string(key) + "=" + text;
    });
    return out;
  } else {
    return "";
  }
}
}  // namespace detail

// The expression as text: leaves show name:type, ops their operands and attributes.
template <expression E>
std::string node_string(const E& e) {
  if constexpr (E::kind == node_kind::placeholder || E::kind == node_kind::variable) {
    return std::string(E::name.view()) + ":" + type_string<E>();
  } else if constexpr (E::kind == node_kind::constant) {
    return "constant:" + type_string<E>();
  } else if constexpr (E::kind == node_kind::literal) {
    return detail::literal_string(e.value);
  } else {
    constexpr std::string_view op_name = E::op_name;  // a local copy: see describe_node
    std::string out = std::string(op_name) + "(";
    bool first = true;
    std::apply([&](const auto&... a) { ((out += (first ? "" : ", ") + node_string(a), first = false), ...); },
               e.args());
    const std::string attrs = detail::attribute_string(e);
    if (!attrs.empty()) out += ", " + attrs;
    return out + ")";
  }
}

// e.g. "add(matmul(x:f32[?,784], W:f32[784,10]), b:f32[10]) : f32[?,10]"
template <expression E>
std::string to_string(const E& e) {
  return node_string(e) + " : " + type_string<E>();
}

}  // namespace symflow
