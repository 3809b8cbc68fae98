// Histogram bucketing (debug/tensorboard/histogram.hpp) on hostile inputs (issue 14): the bucket count
// is capped with an error naming the limit, and data spanning more than DBL_MAX (max - min overflows
// to Inf) is bucketed without converting an Inf or NaN position to an integer (undefined behaviour,
// caught by -fsanitize=float-cast-overflow).
#include <gtest/gtest.h>

#include <cfloat>
#include <span>
#include <string>
#include <vector>

#include <symflow/debug/tensorboard/histogram.hpp>

using namespace symflow;
using namespace symflow::tensorboard;

TEST(HistogramBucketing, UniformBucketCountIsCapped) {
  EXPECT_NO_THROW(histogram_buckets::uniform(histogram_buckets::max_uniform_count));
  try {
    histogram_buckets::uniform(std::size_t(1) << 40);
    FAIL() << "2^40 buckets accepted";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(histogram_buckets::max_uniform_count)), std::string::npos) << e.what();
  }
  // Built directly, bypassing uniform(): make_histogram checks too, before allocating.
  const std::vector<float> v{1.0f, 2.0f};
  histogram_buckets huge;
  huge.uniform_count = std::size_t(1) << 40;
  EXPECT_THROW(make_histogram(std::span<const float>(v), huge), value_error);
  EXPECT_THROW(make_histogram(std::span<const float>(), huge), value_error);
}

TEST(HistogramBucketing, DataSpanningMoreThanDblMaxLandsInTheEndBuckets) {
  // Buckets [-DBL_MAX, -DBL_MAX/2), [-DBL_MAX/2, 0), [0, DBL_MAX/2), [DBL_MAX/2, DBL_MAX]; values a few
  // units from 0 are not resolved at this scale (they round to the middle, 0).
  const std::vector<double> v{-DBL_MAX, -DBL_MAX / 4, 0.0, 1.0, DBL_MAX, DBL_MAX / 2};
  const histogram h = make_histogram(std::span<const double>(v), histogram_buckets::uniform(4));
  ASSERT_EQ(h.bucket_counts.size(), 4u);
  EXPECT_EQ(h.bucket_counts[0], 1.0);
  EXPECT_EQ(h.bucket_counts[1], 1.0);  // -DBL_MAX / 4
  EXPECT_EQ(h.bucket_counts[2], 2.0);  // 0, 1
  EXPECT_EQ(h.bucket_counts[3], 2.0);  // DBL_MAX / 2, DBL_MAX
  for (double l : h.bucket_limits) EXPECT_TRUE(std::isfinite(l)) << l;
  EXPECT_EQ(h.bucket_limits[1], 0.0);
  EXPECT_EQ(h.bucket_limits.back(), DBL_MAX);
}

TEST(HistogramBucketing, OrdinaryDataKeepsItsBuckets) {
  const std::vector<float> v{0.0f, 0.5f, 1.0f, 2.9f, 3.0f};
  const histogram h = make_histogram(std::span<const float>(v), histogram_buckets::uniform(3));
  EXPECT_EQ(h.bucket_counts, (std::vector<double>{2, 1, 2}));
  EXPECT_EQ(h.bucket_limits, (std::vector<double>{1, 2, 3}));
}
