#pragma once
// Shared by the reverse sweep tests (reverse_sweep*_test.cpp): random values and the comparison\n// with float64 central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <symflow/symflow.hpp>
#include <symflow/symbolic/reverse_sweep.hpp>

using namespace symflow;

namespace {

template <class S>
tensor<double, S> random_values(const extents_t<S::rank>& extents, unsigned seed) {
  tensor<double, S> t(extents, uninitialized);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (auto& v : t) v = dist(rng);
  return t;
}

// Central differences of loss(leaf) in float64, element by element.
template <class Loss, class Evaluate, class Tensor>
std::vector<double> finite_differences(const Loss& loss, Tensor& value, Evaluate&& evaluate) {
  std::vector<double> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const double original = value.data()[i];
    const double h = 1e-6 * std::max(1.0, std::abs(original));
    value.data()[i] = original + h;
    const double up = evaluate(loss)[0];
    value.data()[i] = original - h;
    const double down = evaluate(loss)[0];
    value.data()[i] = original;
    out.push_back((up - down) / (2 * h));
  }
  return out;
}

template <class Tensor>
void expect_close(const Tensor& symbolic, const std::vector<double>& numeric, double tolerance = 1e-7) {
  ASSERT_EQ(symbolic.size(), numeric.size());
  for (std::size_t i = 0; i < numeric.size(); ++i) {
    const double scale = std::max({1.0, std::abs(symbolic.data()[i]), std::abs(numeric[i])});
    EXPECT_LT(std::abs(symbolic.data()[i] - numeric[i]) / scale, tolerance)
        << "element " << i << ": symbolic " << symbolic.data()[i] << ", numeric " << numeric[i];
  }
}

template <int Depth, class H>
auto chain(const H& h) {
  if constexpr (Depth == 0) {
    return h;
  } else {
    auto next = tanh(h) * h + h;  // h used three times per level
    return chain<Depth - 1>(next);
  }
}

}  // namespace
