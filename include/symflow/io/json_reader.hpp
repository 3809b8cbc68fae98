#pragma once
// Reading a graph value from JSON (the format: json.hpp, the header to include): a guard that
// watches the parser and accessors that check what they read (load_graph_json, which uses them, is
// json_impl.hpp). Every refusal is a graph_error naming the JSON pointer of what it read.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../core/storage_float.hpp"
#include "../core/excerpt.hpp"
#include "../ir/graph.hpp"
#include "json_format.hpp"
#include "../ir/validate.hpp"

namespace symflow {
namespace detail {

// Watches the parser, so that hostile structure is refused while the text is read, with the JSON
// pointer of where: duplicate keys (nlohmann-json would silently keep one of the values), objects
// with more keys than any graph object has (inserting into an ordered object costs time linear in
// its size, so one huge object would take quadratic time), and nesting deeper than any graph file
// needs (which also bounds the bookkeeping here).
class json_structure_guard {
 public:
  // A graph file nests 5 deep (/nodes/3/attrs/axes/0), and 5 more per sub-graph
  // (/nodes/3/attrs/body/graph/nodes/0/...), at most graph_max_nesting of them.
  static constexpr std::size_t max_depth = 6 + 5 * graph_max_nesting;
  static constexpr std::size_t max_keys = 64;   // a node has 9 keys, an attrs object at most 3

  bool operator()(int /*depth*/, ojson::parse_event_t event, ojson& parsed) {
    using event_t = ojson::parse_event_t;
    switch (event) {
      case event_t::object_start:
      case event_t::array_start:
        if (open_.size() == max_depth)
          fail(pointer(open_.size()), "nesting deeper than " + std::to_string(max_depth) + " levels");
        open_.push_back({event == event_t::object_start, 0, {}});
        break;
      case event_t::key: {
        auto& keys = open_.back().keys;
        const auto& key = parsed.get_ref<const std::string&>();
        if (keys.size() == max_keys)
          fail(pointer(open_.size() - 1), "an object with more than " + std::to_string(max_keys) + " keys");
        for (const auto& k : keys)
          if (k == key) fail(pointer(open_.size() - 1) + "/" + json_pointer_token(key), "duplicate key \"" + excerpt(key) + "\"");
        keys.push_back(key);
        break;
      }
      case event_t::object_end:
      case event_t::array_end:
        open_.pop_back();
        element_done();
        break;
      case event_t::value: element_done(); break;
    }
    return true;
  }

 private:
  struct container {
    bool is_object;
    std::size_t index;              // arrays: elements completed so far
    std::vector<std::string> keys;  // objects: keys so far, the last one being read
  };
  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    // A pointer quotes keys, which a hostile file can make 60 KB long: at most 200 bytes of it.
    throw graph_error("graph JSON: " + (path.empty() ? std::string("/") : excerpt(path, 200)) + ": " + what);
  }
  void element_done() {
    if (!open_.empty() && !open_.back().is_object) ++open_.back().index;
  }
  // The pointer to the element being read in the outermost `levels` open containers.
  std::string pointer(std::size_t levels) const {
    std::string out;
    for (std::size_t i = 0; i < levels; ++i) {
      const container& c = open_[i];
      if (!c.is_object) out += "/" + std::to_string(c.index);
      else if (!c.keys.empty()) out += "/" + json_pointer_token(c.keys.back());
    }
    return out;
  }
  std::vector<container> open_;
};

// Reading: every accessor names the JSON pointer of what it reads.
class json_reader {
 public:
  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    // A pointer quotes keys, which a hostile file can make 60 KB long: at most 200 bytes of it.
    throw graph_error("graph JSON: " + (path.empty() ? std::string("/") : excerpt(path, 200)) + ": " + what);
  }
  static const ojson& field(const ojson& obj, const std::string& path, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, std::string("missing key \"") + key + "\"");
    return *it;
  }
  static void only_keys(const ojson& obj, const std::string& path, std::initializer_list<std::string_view> keys) {
    if (!obj.is_object()) fail(path, "expected an object");
    for (const auto& [k, v] : obj.items()) {
      bool known = false;
      for (auto key : keys) known = known || key == k;
      if (!known) fail(path + "/" + json_pointer_token(k), "unknown key \"" + excerpt(k) + "\"");
    }
  }
  static const ojson& array(const ojson& obj, const std::string& path, const char* key) {
    const ojson& a = field(obj, path, key);
    if (!a.is_array()) fail(path + "/" + key, "expected an array");
    return a;
  }
  static std::string string(const ojson& obj, const std::string& path, const char* key) {
    const ojson& s = field(obj, path, key);
    if (!s.is_string()) fail(path + "/" + key, "expected a string");
    return s.get<std::string>();
  }
  static std::int64_t integer(const ojson& v, const std::string& path, std::int64_t lo, std::int64_t hi) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(hi)) fail(path, "integer " + std::to_string(u) + " is out of range");
      return static_cast<std::int64_t>(u);
    }
    if (!v.is_number_integer()) fail(path, "expected an integer");
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi) fail(path, "integer " + std::to_string(x) + " is out of range");
    return x;
  }
  static std::int64_t integer(const ojson& obj, const std::string& path, const char* key, std::int64_t lo,
                              std::int64_t hi) {
    return integer(field(obj, path, key), path + "/" + key, lo, hi);
  }
  static std::uint32_t id(const ojson& v, const std::string& path) {
    return static_cast<std::uint32_t>(integer(v, path, 0, std::numeric_limits<std::uint32_t>::max()));
  }
  static dtype type_code(const ojson& obj, const std::string& path) {
    const std::string s = string(obj, path, "dtype");
    const auto d = dtype_from_name(s);
    if (!d) fail(path + "/dtype", "unknown dtype \"" + excerpt(s) + "\"");
    return *d;
  }
  static std::vector<std::int64_t> extents(const ojson& obj, const std::string& path, const char* key) {
    const ojson& a = array(obj, path, key);
    if (a.size() > graph_max_rank)
      fail(path + "/" + key, "rank " + std::to_string(a.size()) + " exceeds the maximum of " + std::to_string(graph_max_rank));
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < a.size(); ++i)
      out.push_back(integer(a[i], path + "/" + key + "/" + std::to_string(i), -1, std::numeric_limits<std::int64_t>::max()));
    return out;
  }
  static graph_type type(const ojson& obj, const std::string& path) {
    return {type_code(obj, path), extents(obj, path, "shape")};
  }
  static graph_location location(const ojson& obj, const std::string& path) {
    return {string(obj, path, "file"),
            static_cast<std::uint32_t>(integer(obj, path, "line", 0, std::numeric_limits<std::uint32_t>::max()))};
  }
  static double floating(const ojson& v, const std::string& path) {
    if (v.is_string()) {
      const auto& s = v.get_ref<const std::string&>();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      fail(path, "expected a number, \"nan\", \"inf\" or \"-inf\"");
    }
    if (!v.is_number()) fail(path, "expected a number");
    return v.get<double>();
  }
  static graph_tensor tensor(const ojson& obj, const std::string& path, dtype type) {
    only_keys(obj, path, {"shape", "values"});
    graph_tensor t;
    t.type = type;
    t.extents = extents(obj, path, "shape");
    const std::uint64_t n = checked_element_count("graph JSON", path, t.extents, false);
    const ojson& values = array(obj, path, "values");
    if (values.size() != n)
      fail(path + "/values", std::to_string(values.size()) + " values for shape " + graph_shape_string(t.extents) +
                                 " (" + std::to_string(n) + " expected)");
    t.bytes.resize(n * dtype_size(type));
    unsigned char* p = t.bytes.data();
    visit_dtype(type, [&](auto zero) {
      using T = decltype(zero);
      for (std::size_t i = 0; i < n; ++i) {
        const std::string at = path + "/values/" + std::to_string(i);
        T v;
        if constexpr (std::is_same_v<T, bool>) {
          if (!values[i].is_boolean()) fail(at, "expected true or false");
          v = values[i].get<bool>();
        } else if constexpr (is_floating_dtype_v<T>) {
          const double d = floating(values[i], at);
          if (std::isfinite(d) && std::fabs(d) > double(std::numeric_limits<T>::max()))
            fail(at, "out of range for " + std::string(dtype_name(type)));
          if constexpr (is_storage_float_v<T>) v = round_to_storage_float<T>(d);  // rounded once
          else v = static_cast<T>(d);
        } else if constexpr (std::is_same_v<T, std::uint64_t>) {  // beyond int64's range
          if (!values[i].is_number_unsigned()) fail(at, "expected an integer from 0 to 2^64-1");
          v = values[i].template get<std::uint64_t>();
        } else {
          v = static_cast<T>(integer(values[i], at, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
        }
        std::memcpy(p + sizeof(T) * i, &v, sizeof(T));
      }
    });
    return t;
  }
  static attribute_value attribute(const ojson& v, const std::string& path, std::size_t depth);
  static graph graph_object(const ojson& doc, const std::string& base, std::size_t depth);
};

// A sub-graph attribute: {"graph": {...}}.
inline attribute_value json_reader::attribute(const ojson& v, const std::string& path, std::size_t depth) {
  if (v.is_object()) {
    only_keys(v, path, {"graph"});
    if (depth >= graph_max_nesting)
      fail(path, "sub-graphs nest deeper than " + std::to_string(graph_max_nesting) + " levels");
    return subgraph{std::make_shared<const graph>(graph_object(field(v, path, "graph"), path + "/graph", depth + 1))};
  }
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return integer(v, path, std::numeric_limits<std::int64_t>::min(),
                                            std::numeric_limits<std::int64_t>::max());
  if (v.is_number_float()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::vector<std::int64_t> out;
    for (std::size_t i = 0; i < v.size(); ++i)
      out.push_back(integer(v[i], path + "/" + std::to_string(i), std::numeric_limits<std::int64_t>::min(),
                            std::numeric_limits<std::int64_t>::max()));
    return out;
  }
  fail(path, "an attribute is a boolean, number, string, list of integers or {\"graph\": ...}");
}

// The entries of one graph (the document's, or a sub-graph's with `base` its pointer); ids count
// from 0 in each.
inline graph json_reader::graph_object(const ojson& doc, const std::string& base, std::size_t depth) {
  using detail::json_reader;
  if (!doc.is_object()) fail(base, "expected an object");
  if (depth > 0) only_keys(doc, base, {"inputs", "parameters", "constants", "nodes", "outputs"});
  graph g;
  std::uint32_t next_id = 0;
  auto check_id = [&](const ojson& o, const std::string& path) {
    const std::uint32_t id = json_reader::id(json_reader::field(o, path, "id"), path + "/id");
    if (id != next_id)
      json_reader::fail(path + "/id", "id " + std::to_string(id) + " where " + std::to_string(next_id) +
                                          " is expected (ids number inputs, parameters, constants, nodes in order)");
    ++next_id;
  };
  auto leaves = [&](const char* key, std::vector<graph_leaf>& out, bool parameter) {
    const ojson& a = json_reader::array(doc, base, key);
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string path = base + "/" + key + "/" + std::to_string(i);
      if (parameter) json_reader::only_keys(a[i], path, {"id", "name", "scope", "dtype", "shape", "file", "line", "value"});
      else json_reader::only_keys(a[i], path, {"id", "name", "scope", "dtype", "shape", "file", "line"});
      check_id(a[i], path);
      graph_leaf l;
      l.name = json_reader::string(a[i], path, "name");
      l.scope = json_reader::string(a[i], path, "scope");
      l.type = json_reader::type(a[i], path);
      l.where = json_reader::location(a[i], path);
      if (parameter && a[i].contains("value")) l.value = json_reader::tensor(a[i]["value"], path + "/value", l.type.type);
      out.push_back(std::move(l));
    }
  };
  leaves("inputs", g.inputs, false);
  leaves("parameters", g.parameters, true);
  const ojson& constants = json_reader::array(doc, base, "constants");
  for (std::size_t i = 0; i < constants.size(); ++i) {
    const std::string path = base + "/constants/" + std::to_string(i);
    const ojson& c = constants[i];
    json_reader::only_keys(c, path, {"id", "name", "dtype", "shape", "file", "line", "data"});
    check_id(c, path);
    graph_constant k;
    k.name = json_reader::string(c, path, "name");
    k.type = json_reader::type(c, path);
    k.where = json_reader::location(c, path);
    k.data = json_reader::tensor(json_reader::field(c, path, "data"), path + "/data", k.type.type);
    g.constants.push_back(std::move(k));
  }
  const ojson& nodes = json_reader::array(doc, base, "nodes");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string path = base + "/nodes/" + std::to_string(i);
    const ojson& o = nodes[i];
    json_reader::only_keys(o, path, {"id", "op", "name", "inputs", "attrs", "dtype", "shape", "file", "line"});
    check_id(o, path);
    graph_node n;
    n.op = json_reader::string(o, path, "op");
    n.name = json_reader::string(o, path, "name");
    const ojson& inputs = json_reader::array(o, path, "inputs");
    for (std::size_t k = 0; k < inputs.size(); ++k) n.inputs.push_back(json_reader::id(inputs[k], path + "/inputs/" + std::to_string(k)));
    const ojson& attrs = json_reader::field(o, path, "attrs");
    if (!attrs.is_object()) json_reader::fail(path + "/attrs", "expected an object");
    for (const auto& [key, value] : attrs.items())
      n.attributes.push_back({key, json_reader::attribute(value, path + "/attrs/" + detail::json_pointer_token(key), depth)});
    n.type = json_reader::type(o, path);
    n.where = json_reader::location(o, path);
    // A floating literal's value may be written as an integer or as "nan"/"inf"/"-inf".
    if (n.is_literal() && visit_dtype(n.type.type, [](auto t) { return is_floating_dtype_v<decltype(t)>; }))
      for (auto& a : n.attributes)
        if (a.key == "value" && !std::holds_alternative<double>(a.value)) {
          if (auto* s = std::get_if<std::string>(&a.value)) a.value = json_reader::floating(*s, path + "/attrs/value");
          else if (auto* x = std::get_if<std::int64_t>(&a.value)) a.value = static_cast<double>(*x);
        }
    g.nodes.push_back(std::move(n));
  }
  const ojson& outputs = json_reader::array(doc, base, "outputs");
  for (std::size_t k = 0; k < outputs.size(); ++k) g.outputs.push_back(json_reader::id(outputs[k], base + "/outputs/" + std::to_string(k)));
  return g;
}
}  // namespace detail

}  // namespace symflow
