#pragma once
// Metrics of a classifier: accuracy from logits and integer labels, and running means (a mean loss
// over the batches of an epoch, weighted by batch size so a short last batch counts for what it holds).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "../core/error.hpp"
#include "../core/tensor.hpp"

namespace symflow {

// How many rows of logits [n, classes] have their largest entry at the row's label. The first of
// equal maxima counts (as numpy's argmax); a row holding NaN never counts, whatever its label.
template <class Logits, class Labels>
std::size_t correct_predictions(const Logits& logits, const Labels& labels) {
  static_assert(std::remove_cvref_t<Logits>::rank == 2, "symflow: logits are [examples, classes]");
  static_assert(std::remove_cvref_t<Labels>::rank == 1, "symflow: labels are [examples]");
  static_assert(std::is_integral_v<typename std::remove_cvref_t<Labels>::value_type>,
                "symflow: labels are integers (class indices)");
  const std::size_t n = logits.extents()[0], classes = logits.extents()[1];
  if (labels.extents()[0] != n)
    throw shape_error("correct_predictions: " + std::to_string(n) + " rows of logits but " +
                      std::to_string(labels.extents()[0]) + " labels");
  std::size_t correct = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t best = 0;
    bool finite = classes > 0;
    for (std::size_t c = 0; c < classes; ++c) {
      const auto value = logits(i, c);
      if (std::isnan(value)) finite = false;
      if (value > logits(i, best)) best = c;
    }
    const auto label = labels(i);
    correct += finite && label >= 0 && static_cast<std::size_t>(label) == best;
  }
  return correct;
}

// The fraction of rows classified correctly (0 for no rows).
template <class Logits, class Labels>
double accuracy(const Logits& logits, const Labels& labels) {
  const std::size_t n = logits.extents()[0];
  return n ? double(correct_predictions(logits, labels)) / double(n) : 0.0;
}

// A weighted mean accumulated value by value: add(batch_loss, batch_size) per batch gives the mean
// loss per example over everything added.
class running_mean {
 public:
  void add(double value, double weight = 1) {
    if (!(weight >= 0)) throw value_error("running_mean: weights must be >= 0, got " + std::to_string(weight));
    sum_ += value * weight;
    weight_ += weight;
  }
  double mean() const { return weight_ > 0 ? sum_ / weight_ : 0.0; }
  double weight() const { return weight_; }
  void reset() { sum_ = weight_ = 0; }

 private:
  double sum_ = 0, weight_ = 0;
};

// Correct predictions over the batches of an epoch.
class accuracy_counter {
 public:
  template <class Logits, class Labels>
  void add(const Logits& logits, const Labels& labels) {
    correct_ += correct_predictions(logits, labels);
    seen_ += logits.extents()[0];
  }
  std::size_t correct() const { return correct_; }
  std::size_t seen() const { return seen_; }
  double accuracy() const { return seen_ ? double(correct_) / double(seen_) : 0.0; }
  void reset() { correct_ = seen_ = 0; }

 private:
  std::size_t correct_ = 0, seen_ = 0;
};

}  // namespace symflow
