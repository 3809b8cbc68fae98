#pragma once
// check_numerics: NaN and infinities in evaluation outputs become a numerics_error naming the node
// that first produced them. The switch is process-wide: set_check_numerics(true), or the
// environment variable SYMFLOW_CHECK_NUMERICS=1 read at first use. Detection rides along the fused
// loops (an add per SIMD packet); only when something is found is the evaluation re-run node by node
// (debug/localise.hpp) to find where it started.
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/shape.hpp"

namespace symflow {

namespace detail {
inline std::atomic<int>& check_numerics_flag() {
  static std::atomic<int> flag{[] {
    const char* v = std::getenv("SYMFLOW_CHECK_NUMERICS");
    return v && *v && std::strcmp(v, "0") != 0 ? 1 : 0;
  }()};
  return flag;
}
}  // namespace detail

inline bool check_numerics_enabled() { return detail::check_numerics_flag().load(std::memory_order_relaxed) != 0; }
inline void set_check_numerics(bool on) { detail::check_numerics_flag().store(on ? 1 : 0); }

// Switches check_numerics on for a scope and restores the previous setting.
class check_numerics_scope {
 public:
  explicit check_numerics_scope(bool on = true) : saved_(check_numerics_enabled()) { set_check_numerics(on); }
  ~check_numerics_scope() { set_check_numerics(saved_); }
  check_numerics_scope(const check_numerics_scope&) = delete;
  check_numerics_scope& operator=(const check_numerics_scope&) = delete;

 private:
  bool saved_;
};

// What a tensor holds, in one pass: counts always, statistics over its finite values.
struct value_health {
  std::size_t size = 0, nan = 0, negative_infinity = 0, positive_infinity = 0;
  std::size_t negative = 0, zero = 0, positive = 0;  // finite values by sign
  double min = 0, max = 0, mean = 0, std = 0;        // over finite values (0 when none)

  std::size_t nonfinite() const { return nan + negative_infinity + positive_infinity; }
  bool healthy() const { return nonfinite() == 0; }
  std::string counts_string() const {
    return std::to_string(nan) + " NaN, " + std::to_string(negative_infinity) + " -Inf, " +
           std::to_string(positive_infinity) + " +Inf of " + std::to_string(size);
  }
  std::string to_string() const {
    std::string s = counts_string();
    if (size > nonfinite())
      s += "; finite min " + std::to_string(min) + ", max " + std::to_string(max) + ", mean " + std::to_string(mean);
    return s;
  }
};

template <class T>
value_health health_of(const T* data, std::size_t n) {
  value_health h;
  h.size = n;
  if constexpr (is_floating_dtype_v<T> || std::is_integral_v<T>) {
    double sum = 0, sum_sq = 0;
    std::size_t finite = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double v = double(compute_type_t<T>(data[i]));
      if (std::isnan(v)) {
        ++h.nan;
        continue;
      }
      if (std::isinf(v)) {
        ++(v < 0 ? h.negative_infinity : h.positive_infinity);
        continue;
      }
      if (finite == 0) h.min = h.max = v;
      h.min = std::min(h.min, v);
      h.max = std::max(h.max, v);
      ++(v < 0 ? h.negative : v == 0 ? h.zero : h.positive);
      sum += v;
      sum_sq += v * v;
      ++finite;
    }
    if (finite) {
      h.mean = sum / double(finite);
      h.std = std::sqrt(std::max(0.0, sum_sq / double(finite) - h.mean * h.mean));
    }
  }
  return h;
}

inline value_health health_of(dtype type, const void* data, std::size_t n) {
  if (!find_dtype_info(type)) return {};  // a message about a corrupt value does not throw again
  return visit_dtype(type, [&](auto t) { return health_of(static_cast<const decltype(t)*>(data), n); });
}

// True when every element is finite (always for integer and bool dtypes).
inline bool all_finite(dtype type, const void* data, std::size_t n) {
  if (!find_dtype_info(type)) return true;
  return visit_dtype(type, [&](auto t) {
    using T = decltype(t);
    if constexpr (is_floating_dtype_v<T>) {
      using C = compute_type_t<T>;  // f16 and bf16 are scanned in f32
      const T* p = static_cast<const T*>(data);
      C acc = 0;
      for (std::size_t i = 0; i < n; ++i) acc += C(p[i]) - C(p[i]);  // NaN as soon as one is not finite
      return acc == 0;
    } else {
      return true;
    }
  });
}

// The node that first produced a NaN or an infinity, and what its operands held.
class numerics_error : public error {
 public:
  struct operand {
    std::string description;  // "matmul 'dense1/matmul' f32[64,10]"
    value_health health;
  };
  numerics_error(std::string op, std::string node, std::string location, dtype type, std::vector<std::size_t> extents,
                 value_health health, std::vector<operand> operands, std::string context = {})
      : error(message(op, node, location, type, extents, health, operands, context)),
        op_(std::move(op)), node_(std::move(node)), location_(std::move(location)), type_(type),
        extents_(std::move(extents)), health_(health), operands_(std::move(operands)) {}

  const std::string& op() const noexcept { return op_; }
  const std::string& node() const noexcept { return node_; }
  const std::string& location() const noexcept { return location_; }
  dtype type() const noexcept { return type_; }
  const std::vector<std::size_t>& extents() const noexcept { return extents_; }
  const value_health& health() const noexcept { return health_; }
  const std::vector<operand>& operands() const noexcept { return operands_; }

 private:
  static std::string message(const std::string& op, const std::string& node, const std::string& location, dtype type,
                             const std::vector<std::size_t>& extents, const value_health& h,
                             const std::vector<operand>& operands, const std::string& context) {
    std::string m = "check_numerics: " + (context.empty() ? std::string() : context + ": ") + op + " '" + node + "'" +
                    (location.empty() ? std::string() : " (" + location + ")") + " produced " + h.counts_string() +
                    " values of " + std::string(dtype_name(type)) + format_extents(extents);
    for (std::size_t i = 0; i < operands.size(); ++i)
      m += "\n  operand " + std::to_string(i) + ": " + operands[i].description + ": " + operands[i].health.to_string();
    return m;
  }
  std::string op_, node_, location_;
  dtype type_;
  std::vector<std::size_t> extents_;
  value_health health_;
  std::vector<operand> operands_;
};

}  // namespace symflow
