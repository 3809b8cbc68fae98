#pragma once
// Random test inputs shared by the elementwise, structural and reduction tests.
#include <cstddef>
#include <random>
#include <type_traits>

#include <symflow/symflow.hpp>

namespace test_random {

template <class T, std::size_t R>
using dyn_tensor = symflow::tensor<T, symflow::dyn_shape<R>>;

// Uniform values in [lo, hi]: bool fair coin flips, integer dtypes integers in that range, floating
// dtypes reals, or with `integral` floats holding integers (their sums stay exact in float below
// 2^24 whatever the summation order).
template <class T, std::size_t R>
dyn_tensor<T, R> random_tensor(const symflow::extents_t<R>& e, double lo, double hi, std::mt19937& g,
                               bool integral = false) {
  dyn_tensor<T, R> t(e, symflow::uninitialized);
  if constexpr (std::is_same_v<T, bool>) {
    std::bernoulli_distribution d(0.5);
    for (auto& v : t) v = d(g);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (integral) {
      std::uniform_int_distribution<long long> d(static_cast<long long>(lo), static_cast<long long>(hi));
      for (auto& v : t) v = static_cast<T>(d(g));
    } else {
      std::uniform_real_distribution<double> d(lo, hi);
      for (auto& v : t) v = static_cast<T>(d(g));
    }
  } else {
    std::uniform_int_distribution<long long> d(static_cast<long long>(lo), static_cast<long long>(hi));
    for (auto& v : t) v = static_cast<T>(d(g));
  }
  return t;
}

}  // namespace test_random
