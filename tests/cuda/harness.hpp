#pragma once
// Shared by the GPU tests (.cu, nvcc) and the CPU references (cpu_reference.cpp, the C++ compiler):
// type-erased host arrays, random inputs drawn from a case's leaves, and the comparison.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <symflow/core/dtype.hpp>
#include <symflow/core/tensor.hpp>

namespace symflow_cuda_test {

// A host array of any dtype and rank (inputs and results of a case).
struct host_array {
  symflow::dtype type{};
  std::vector<std::size_t> extents;
  std::vector<unsigned char> bytes;

  std::size_t size() const {
    std::size_t n = 1;
    for (std::size_t e : extents) n *= e;
    return n;
  }
  template <class T>
  T* data() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  template <class T, std::size_t R>
  symflow::extents_t<R> extents_as() const {
    symflow::extents_t<R> e{};
    for (std::size_t i = 0; i < R; ++i) e[i] = extents[i];
    return e;
  }
  template <class T, class S>
  static host_array of(const symflow::tensor<T, S>& t) {
    host_array a{symflow::dtype_v<T>, {t.extents().begin(), t.extents().end()}, {}};
    a.bytes.resize(t.size() * sizeof(T));
    if (t.size()) std::memcpy(a.bytes.data(), t.data(), a.bytes.size());
    return a;
  }
};
using case_inputs = std::vector<host_array>;

// Cases may narrow the range of a leaf's random values (log, sqrt, division, labels).
template <class Case>
std::pair<double, double> input_range(std::size_t leaf) {
  if constexpr (requires { Case::range(leaf); }) return Case::range(leaf);
  else return {-1.0, 1.0};
}

template <class Case>
case_inputs make_inputs(unsigned seed) {
  std::mt19937_64 rng(seed);
  const auto extents = Case::extents();
  case_inputs inputs;
  std::size_t i = 0;
  std::apply(
      [&](const auto&... leaf) {
        auto one = [&](const auto& l) {
          using L = std::remove_cvref_t<decltype(l)>;
          using T = typename L::value_type;
          host_array a{symflow::dtype_v<T>, extents.at(i), {}};
          if (a.extents.size() != L::rank) throw std::logic_error("case extents do not match a leaf's rank");
          a.bytes.resize(a.size() * sizeof(T));
          const auto [lo, hi] = input_range<Case>(i);
          T* d = a.template data<T>();
          for (std::size_t k = 0; k < a.size(); ++k) {
            if constexpr (std::is_same_v<T, bool>) {
              d[k] = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
            } else if constexpr (std::is_integral_v<T>) {
              d[k] = T(std::uniform_int_distribution<long long>((long long)lo, (long long)hi)(rng));
            } else {
              d[k] = T(std::uniform_real_distribution<double>(lo, hi)(rng));
            }
          }
          inputs.push_back(std::move(a));
          ++i;
        };
        (one(leaf), ...);
      },
      Case::leaves());
  return inputs;
}

// ||gpu - cpu|| / ||cpu|| for floating point (NaN positions must agree), exact equality otherwise.
struct comparison {
  bool ok = true;
  std::string message;
};
template <class T>
comparison compare_as(const host_array& gpu, const host_array& cpu, double tolerance) {
  comparison c;
  const T* g = gpu.data<T>();
  const T* r = cpu.data<T>();
  const std::size_t n = cpu.size();
  std::ostringstream os;
  if constexpr (std::is_floating_point_v<T>) {
    double num = 0, den = 0, worst = 0;
    std::size_t worst_at = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const bool gn = std::isnan(double(g[k])), rn = std::isnan(double(r[k]));
      if (gn || rn) {
        if (gn != rn) {
          os << "NaN mismatch at " << k << ": gpu " << g[k] << ", cpu " << r[k];
          return {false, os.str()};
        }
        continue;
      }
      if (std::isinf(double(r[k])) || std::isinf(double(g[k]))) {
        if (g[k] != r[k]) {
          os << "infinity mismatch at " << k << ": gpu " << g[k] << ", cpu " << r[k];
          return {false, os.str()};
        }
        continue;
      }
      const double d = double(g[k]) - double(r[k]);
      num += d * d;
      den += double(r[k]) * double(r[k]);
      if (std::abs(d) > worst) {
        worst = std::abs(d);
        worst_at = k;
      }
    }
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (!(rel <= tolerance)) {
      os << "relative error " << rel << " > " << tolerance << " (largest difference " << worst << " at " << worst_at
         << ": gpu " << g[worst_at] << ", cpu " << r[worst_at] << ")";
      return {false, os.str()};
    }
    os << "relative error " << rel;
    c.message = os.str();
  } else {
    for (std::size_t k = 0; k < n; ++k)
      if (g[k] != r[k]) {
        os << "mismatch at " << k << ": gpu " << +g[k] << ", cpu " << +r[k];
        return {false, os.str()};
      }
  }
  return c;
}

inline comparison compare(const host_array& gpu, const host_array& cpu, double tolerance) {
  if (gpu.type != cpu.type) return {false, "dtype differs"};
  if (gpu.extents != cpu.extents) return {false, "extents differ"};
  switch (cpu.type) {
    case symflow::dtype::f32: return compare_as<float>(gpu, cpu, tolerance);
    case symflow::dtype::f64: return compare_as<double>(gpu, cpu, tolerance);
    case symflow::dtype::i32: return compare_as<std::int32_t>(gpu, cpu, tolerance);
    case symflow::dtype::i64: return compare_as<std::int64_t>(gpu, cpu, tolerance);
    case symflow::dtype::boolean: return compare_as<bool>(gpu, cpu, tolerance);
    default: break;  // the storage-only dtypes: no GPU case produces them
  }
  return {false, "dtype not compared by this harness"};
}

// Defined in cpu_reference.cpp for every case (symflow::eval on the CPU).
template <class Case>
host_array cpu_reference(const case_inputs& inputs);

}  // namespace symflow_cuda_test
