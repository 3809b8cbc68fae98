#pragma once
// Standardisation of inputs: statistics from the training data, applied unchanged to every split
// (statistics of the test data would leak it into training).
#include <cmath>
#include <string>
#include <type_traits>

#include "../core/error.hpp"
#include "../core/tensor.hpp"

namespace symflow {

struct standardization {
  double mean = 0;
  double std = 1;
};

// Mean and population standard deviation over every element, accumulated in double (two passes:
// the one-pass sum-of-squares formula loses digits when the mean is large against the spread).
template <class T, shape_spec S>
  requires std::is_floating_point_v<T>
standardization statistics_of(const tensor<T, S>& t) {
  if (t.size() == 0) throw value_error("statistics_of: the tensor has no elements");
  double sum = 0;
  for (T x : t) sum += x;
  const double mean = sum / double(t.size());
  double squares = 0;
  for (T x : t) squares += (x - mean) * (x - mean);
  return {mean, std::sqrt(squares / double(t.size()))};
}

// x <- (x - mean) / std for every element.
template <class T, shape_spec S>
  requires std::is_floating_point_v<T>
void standardize(tensor<T, S>& t, const standardization& s) {
  if (!(s.std > 0) || !std::isfinite(s.std) || !std::isfinite(s.mean))
    throw value_error("standardize: the standard deviation must be positive and finite, got mean " +
                      std::to_string(s.mean) + ", std " + std::to_string(s.std));
  const double inverse = 1.0 / s.std;
  for (T& x : t) x = static_cast<T>((x - s.mean) * inverse);
}

}  // namespace symflow
