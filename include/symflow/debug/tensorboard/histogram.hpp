#pragma once
// Histograms as TensorBoard's HistogramProto holds them: min, max, num, sum, sum of squares, and
// parallel arrays of bucket upper limits and counts. Bucket i counts values in
// [limit[i-1], limit[i]); TensorBoard draws the first bucket from `min` and the last up to `max`.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/separate_compilation.hpp"
#include "protobuf.hpp"

namespace symflow::tensorboard {

// Which bucket limits a histogram uses.
struct histogram_buckets {
  // 0: TensorFlow's default exponential limits (see default_bucket_limits); n > 0: n equal-width
  // buckets spanning [min, max] of the data.
  std::size_t uniform_count = 0;
  // The most equal-width buckets a histogram may have: the count may come from a user's argument,
  // and each bucket is two doubles in memory and in the file (TensorFlow's default is ~1500).
  static constexpr std::size_t max_uniform_count = std::size_t(1) << 16;

  static histogram_buckets tensorflow_default() { return {}; }
  static histogram_buckets uniform(std::size_t count) {
    if (count == 0) throw value_error("histogram_buckets::uniform: the bucket count must be at least 1");
    check_count(count);
    return {count};
  }
  static void check_count(std::size_t count) {
    if (count > max_uniform_count)
      throw value_error("histogram_buckets: " + std::to_string(count) + " equal-width buckets asked for, the limit is " +
                        std::to_string(max_uniform_count) + " (histogram_buckets::max_uniform_count)");
  }
};

// TensorFlow's default limits: ±1e-12 * 1.1^k for every k keeping the magnitude below 1e20, zero,
// and ±DBL_MAX at the ends, so that the buckets are fine near zero and each is 10% wider than the
// last. Histograms logged by symflow and by TensorFlow therefore line up in TensorBoard. The
// sequence is built by repeated multiplication, as TensorFlow does, so the limits are the same doubles.
inline const std::vector<double>& default_bucket_limits() {
  static const std::vector<double> limits = [] {
    std::vector<double> positive;
    for (double v = 1e-12; v < 1e20; v *= 1.1) positive.push_back(v);
    positive.push_back(DBL_MAX);
    std::vector<double> all;
    all.reserve(2 * positive.size() + 1);
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) all.push_back(-*it);
    all.push_back(0.0);
    all.insert(all.end(), positive.begin(), positive.end());
    return all;
  }();
  return limits;
}

struct histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limits;
  std::vector<double> bucket_counts;

  std::string to_proto() const {
    proto_writer w;
    w.double_field(1, min);
    w.double_field(2, max);
    w.double_field(3, num);
    w.double_field(4, sum);
    w.double_field(5, sum_squares);
    w.packed_doubles_field(6, bucket_limits);
    w.packed_doubles_field(7, bucket_counts);
    return w.take();
  }
};

// Builds the histogram of `values`. Non-finite values are refused (value_error naming `what` and
// the index): a NaN has no bucket and would turn sum and sum_squares into NaN, hiding every other
// statistic, and an infinity makes equal-width buckets meaningless; TensorFlow refuses them too.
// With the default limits, runs of empty buckets are merged into one (the count of a merged run is
// 0 and its limit the run's last), which keeps ~1500 mostly empty buckets from reaching the file.
// An empty `values` gives num 0 and min = max = 0.
template <class T>
histogram make_histogram(std::span<const T> values, histogram_buckets buckets = {}, std::string_view what = "histogram") {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "histograms take numbers");
  histogram h;
  histogram_buckets::check_count(buckets.uniform_count);
  if (values.empty()) {
    h.bucket_limits = {DBL_MAX};
    h.bucket_counts = {0.0};
    if (buckets.uniform_count) {
      h.bucket_limits.assign(buckets.uniform_count, 0.0);
      h.bucket_counts.assign(buckets.uniform_count, 0.0);
    }
    return h;
  }
  h.min = DBL_MAX;
  h.max = -DBL_MAX;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double v = static_cast<double>(values[i]);
    if (!std::isfinite(v))
      throw value_error(std::string(what) + ": value " + std::to_string(i) + " is " + (std::isnan(v) ? "NaN" : "infinite") +
                        "; histograms take finite values only");
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.sum += v;
    h.sum_squares += v * v;
  }
  h.num = static_cast<double>(values.size());

  if (buckets.uniform_count) {
    const std::size_t n = buckets.uniform_count;
    // Halves of the values: max - min overflows to Inf for data spanning more than DBL_MAX (an Inf
    // width, then Inf / Inf = NaN positions). Halving is exact above the denormal range, so the
    // buckets are those of (x - min) / ((max - min) / n).
    const double half_width = (h.max / 2 - h.min / 2) / static_cast<double>(n);
    const double width = 2 * half_width;
    h.bucket_counts.assign(n, 0.0);
    h.bucket_limits.resize(n);
    if (width == 0) {
      // All values are equal: every bucket has zero width, so all land in the last, ending at max.
      h.bucket_limits.assign(n, h.max);
      h.bucket_counts.back() = h.num;
      return h;
    }
    for (std::size_t k = 0; k + 1 < n; ++k)
      h.bucket_limits[k] = 2 * (h.min / 2 + static_cast<double>(k + 1) * half_width);
    h.bucket_limits.back() = h.max;
    for (const T& x : values) {
      const double position = std::floor((static_cast<double>(x) / 2 - h.min / 2) / half_width);
      // Clamped before the conversion (a double beyond size_t's range is undefined behaviour to
      // convert); NaN cannot occur (finite values, nonzero width) but would land in bucket 0.
      const std::size_t k = !(position > 0)                       ? 0
                            : position >= static_cast<double>(n) ? n - 1
                                                                 : static_cast<std::size_t>(position);
      h.bucket_counts[k] += 1;
    }
    return h;
  }

  const std::vector<double>& limits = default_bucket_limits();
  std::vector<double> counts(limits.size(), 0.0);
  for (const T& x : values) {
    // The first limit above the value, as TensorFlow picks it; DBL_MAX itself stays in the last.
    std::size_t k = static_cast<std::size_t>(std::upper_bound(limits.begin(), limits.end(), static_cast<double>(x)) - limits.begin());
    counts[std::min(k, limits.size() - 1)] += 1;
  }
  for (std::size_t i = 0; i < limits.size();) {
    if (counts[i] > 0) {
      h.bucket_limits.push_back(limits[i]);
      h.bucket_counts.push_back(counts[i]);
      ++i;
      continue;
    }
    while (i + 1 < limits.size() && counts[i + 1] == 0) ++i;
    h.bucket_limits.push_back(limits[i]);
    h.bucket_counts.push_back(0.0);
    ++i;
  }
  return h;
}

// The instances compiled once under SYMFLOW_SEPARATE_COMPILATION (core/separate_compilation.hpp):
// declared here with KEYWORD `extern`, defined with an empty KEYWORD by training_definitions.hpp.
#define SYMFLOW_HISTOGRAM_INSTANCES(KEYWORD, T) \
  KEYWORD template histogram make_histogram<T>(std::span<const T>, histogram_buckets, std::string_view);
#if SYMFLOW_LIBRARY_DECLARED_ONLY
SYMFLOW_HISTOGRAM_INSTANCES(extern, float)
SYMFLOW_HISTOGRAM_INSTANCES(extern, double)
#endif

}  // namespace symflow::tensorboard
