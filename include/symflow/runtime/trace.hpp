#pragma once
// Traces of intermediate values. Fusion keeps intermediates in registers; a trace asks for some of
// them back: per node, nothing, its health (size and NaN/-Inf/+Inf counts), its full health (+ min,
// max, mean, std and sign counts) or its values, chosen by glob patterns on scoped names
// ("dense1/*", "*/matmul", "grad/*"). The interpreter stores the traced nodes as extra outputs of
// their fused passes (the rest stays fused) and records them in evaluation order; trace_eval runs
// compiled expressions (gradients and training-step updates included) the same way.
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "../ir/value.hpp"
#include "../eval/numerics.hpp"

namespace symflow {

enum class trace_level { none, health, full_health, values };

struct trace_rule {
  std::string pattern;  // glob over scoped names: '*' any run of characters, '?' one
  trace_level level;
};

// Which nodes to trace and how much: the last matching rule wins, else default_level.
struct trace_spec {
  trace_level default_level = trace_level::none;
  std::vector<trace_rule> rules;

  trace_spec& add(std::string pattern, trace_level level) {
    rules.push_back({std::move(pattern), level});
    return *this;
  }
  trace_level level_for(std::string_view name) const {
    trace_level level = default_level;
    for (const auto& r : rules)
      if (glob_match(r.pattern, name)) level = r.level;
    return level;
  }

  static bool glob_match(std::string_view pattern, std::string_view text) {
    std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
    while (t < text.size()) {
      if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
        ++p;
        ++t;
      } else if (p < pattern.size() && pattern[p] == '*') {
        star = p++;
        mark = t;
      } else if (star != std::string_view::npos) {
        p = star + 1;
        t = ++mark;
      } else {
        return false;
      }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
  }
};

struct traced_value {
  std::string node;  // scoped name
  std::string op;
  std::string location;  // file:line where the node was written, if known
  dtype type = dtype::f32;
  runtime_extents extents;
  trace_level level = trace_level::health;
  value_health health;
  std::optional<runtime_tensor> values;  // trace_level::values only
};

class value_trace {
 public:
  std::vector<traced_value> entries;

  const traced_value* find(std::string_view node) const {
    for (const auto& e : entries)
      if (e.node == node) return &e;
    return nullptr;
  }

  std::string to_string() const {
    std::ostringstream out;
    for (const auto& e : entries) {
      out << e.node << " (" << e.op << ") " << dtype_name(e.type) << format_extents(e.extents) << ": ";
      out << (e.level == trace_level::health ? e.health.counts_string() : e.health.to_string());
      if (e.level != trace_level::health)
        out << ", std " << e.health.std << ", " << e.health.negative << " negative, " << e.health.zero << " zero, "
            << e.health.positive << " positive";
      if (e.values) {
        out << "\n  values:";
        const std::size_t n = e.values->size();
        visit_dtype(e.type, [&](auto t) {
          using T = decltype(t);
          const T* v = e.values->template data<T>();
          for (std::size_t i = 0; i < n && i < 32; ++i) out << ' ' << +v[i];
        });
        if (n > 32) out << " ...";
      }
      out << '\n';
    }
    return out.str();
  }

  // {"format":"symflow.trace","version":1,"entries":[{"node":..,"op":..,"dtype":..,"shape":[..],
  //  "level":..,"size":..,"nan":..,"neg_inf":..,"pos_inf":..[,"min","max","mean","std","negative",
  //  "zero","positive"][,"values":[..]]}]}; non-finite numbers as the strings "nan", "inf", "-inf".
  std::string to_json() const {
    std::ostringstream out;
    out.precision(17);
    out << "{\"format\":\"symflow.trace\",\"version\":1,\"entries\":[";
    for (std::size_t k = 0; k < entries.size(); ++k) {
      const auto& e = entries[k];
      const auto& h = e.health;
      out << (k ? ",\n" : "\n") << "{\"node\":" << quoted(e.node) << ",\"op\":" << quoted(e.op)
          << ",\"location\":" << quoted(e.location) << ",\"dtype\":\"" << dtype_name(e.type) << "\",\"shape\":[";
      for (std::size_t i = 0; i < e.extents.size(); ++i) out << (i ? "," : "") << e.extents[i];
      out << "],\"level\":\"" << level_name(e.level) << "\",\"size\":" << h.size << ",\"nan\":" << h.nan
          << ",\"neg_inf\":" << h.negative_infinity << ",\"pos_inf\":" << h.positive_infinity;
      if (e.level != trace_level::health) {
        out << ",\"min\":" << number(h.min) << ",\"max\":" << number(h.max) << ",\"mean\":" << number(h.mean)
            << ",\"std\":" << number(h.std) << ",\"negative\":" << h.negative << ",\"zero\":" << h.zero
            << ",\"positive\":" << h.positive;
      }
      if (e.values) {
        out << ",\"values\":[";
        const std::size_t n = e.values->size();
        visit_dtype(e.type, [&](auto t) {
          using T = decltype(t);
          const T* v = e.values->template data<T>();
          for (std::size_t i = 0; i < n; ++i) out << (i ? "," : "") << number(double(v[i]));
        });
        out << "]";
      }
      out << "}";
    }
    out << "\n]}\n";
    return out.str();
  }

  static std::string_view level_name(trace_level l) {
    switch (l) {
      case trace_level::none: return "none";
      case trace_level::health: return "health";
      case trace_level::full_health: return "full_health";
      case trace_level::values: return "values";
    }
    return "?";
  }

 private:
  static std::string number(double v) {
    if (std::isnan(v)) return "\"nan\"";
    if (std::isinf(v)) return v < 0 ? "\"-inf\"" : "\"inf\"";
    std::ostringstream s;
    s.precision(17);
    s << v;
    return s.str();
  }
  static std::string quoted(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\', out += c;
      else if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else out += c;
    }
    return out + "\"";
  }
};

// The traced record of one value (what the interpreter calls for each traced node).
inline traced_value trace_value(std::string node, std::string op, std::string location, trace_level level, dtype type,
                                const runtime_extents& extents, const void* data) {
  traced_value t{std::move(node), std::move(op), std::move(location), type, extents, level, {}, std::nullopt};
  t.health = health_of(type, data, element_count(extents));
  if (level == trace_level::values) {
    runtime_tensor copy(type, extents);
    if (copy.byte_size()) std::memcpy(copy.bytes(), data, copy.byte_size());
    t.values = std::move(copy);
  }
  return t;
}

}  // namespace symflow
