// Deterministic shuffling, mini-batch plans, row gathering and standardisation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <symflow/data/batches.hpp>
#include <symflow/data/mnist.hpp>
#include <symflow/data/normalize.hpp>
#include <symflow/data/shuffle.hpp>

namespace {

using namespace symflow;

bool is_permutation_of_iota(const std::vector<std::size_t>& p) {
  std::vector<std::size_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != i) return false;
  return true;
}

TEST(Shuffle, IsAPermutationDeterministicPerSeed) {
  for (std::size_t n : {0u, 1u, 2u, 7u, 100u, 1000u}) {
    const auto a = shuffled_indices(n, 123);
    EXPECT_EQ(a.size(), n);
    EXPECT_TRUE(is_permutation_of_iota(a));
    EXPECT_EQ(a, shuffled_indices(n, 123));
    if (n >= 7) {
      EXPECT_NE(a, shuffled_indices(n, 124));
    }
  }
}

// Expected orders computed by an independent Python implementation of MT19937-64 (checked against
// the standard's 10000th-output value 9981545732273789042) and the algorithm in shuffle.hpp.
TEST(Shuffle, MatchesTheDocumentedAlgorithmOnEveryPlatform) {
  EXPECT_EQ(shuffled_indices(10, 42), (std::vector<std::size_t>{1, 7, 9, 0, 3, 8, 4, 2, 5, 6}));
  EXPECT_EQ(shuffled_indices(20, 7),
            (std::vector<std::size_t>{2, 14, 4, 18, 12, 16, 0, 19, 11, 17, 1, 9, 5, 7, 3, 13, 8, 6, 10, 15}));
  EXPECT_EQ(shuffled_indices(1, 0), (std::vector<std::size_t>{0}));
  const auto big = shuffled_indices(1000, 2024);
  EXPECT_EQ(std::vector<std::size_t>(big.begin(), big.begin() + 8),
            (std::vector<std::size_t>{174, 780, 867, 231, 772, 569, 343, 927}));
  std::uint64_t weighted = 0;
  for (std::size_t i = 0; i < big.size(); ++i) weighted += i * big[i];
  EXPECT_EQ(weighted, 243642311u);

  std::mt19937_64 engine(1);
  std::vector<std::uint64_t> draws;
  for (int i = 0; i < 10; ++i) draws.push_back(uniform_below(engine, 3));
  EXPECT_EQ(draws, (std::vector<std::uint64_t>{2, 0, 0, 0, 0, 0, 2, 0, 2, 1}));
  // SplitMix64 seeded with 42 gives 13679457532755275413 first; epoch 0 is that step.
  EXPECT_EQ(epoch_seed(42, 0), 13679457532755275413ull);
  EXPECT_EQ(epoch_seed(42, 3), 6349198060258255764ull);
}

TEST(Shuffle, UniformBelowStaysInRangeAndCoversIt) {
  std::mt19937_64 engine(5);
  for (std::uint64_t bound : {1ull, 2ull, 3ull, 10ull, 1ull << 63, (1ull << 63) + 1, ~0ull}) {
    for (int i = 0; i < 200; ++i) EXPECT_LT(uniform_below(engine, bound), bound);
  }
  std::vector<int> hits(6, 0);
  for (int i = 0; i < 6000; ++i) ++hits[uniform_below(engine, 6)];
  for (int h : hits) EXPECT_GT(h, 800);  // about 1000 each; 800 is over six standard deviations away
}

TEST(BatchPlan, EveryExampleExactlyOnceWithAShortLastBatch) {
  for (std::size_t n : {0u, 1u, 10u, 64u, 1001u})
    for (std::size_t batch : {1u, 3u, 64u, 2000u})
      for (bool shuffled : {false, true}) {
        SCOPED_TRACE("n " + std::to_string(n) + " batch " + std::to_string(batch) + (shuffled ? " shuffled" : ""));
        const batch_plan plan = shuffled ? batch_plan(n, batch, std::uint64_t(99)) : batch_plan(n, batch);
        EXPECT_EQ(plan.batch_count(), (n + batch - 1) / batch);
        std::vector<int> seen(n, 0);
        std::vector<std::size_t> in_order;
        for (std::size_t b = 0; b < plan.batch_count(); ++b) {
          const auto rows = plan.batch(b);
          EXPECT_EQ(rows.size(), b + 1 < plan.batch_count() ? batch : n - b * batch);
          for (std::size_t r : rows) {
            ASSERT_LT(r, n);
            ++seen[r];
            in_order.push_back(r);
          }
        }
        EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
        std::vector<std::size_t> expected(n);
        std::iota(expected.begin(), expected.end(), std::size_t(0));
        if (shuffled) expected = shuffled_indices(n, 99);
        EXPECT_EQ(in_order, expected);
        EXPECT_THROW((void)plan.batch(plan.batch_count()), value_error);
      }
}

TEST(BatchPlan, DroppingTheLastBatchKeepsOnlyFullOnes) {
  const batch_plan plan(10, 4, std::uint64_t(1), last_batch::drop);
  ASSERT_EQ(plan.batch_count(), 2u);
  EXPECT_EQ(plan.batch(1).size(), 4u);
  EXPECT_EQ(batch_plan(8, 4, last_batch::drop).batch_count(), 2u);
  EXPECT_EQ(batch_plan(3, 4, last_batch::drop).batch_count(), 0u);
  EXPECT_THROW(batch_plan(3, 0), value_error);
}

// An empty batch would end in a NaN mean loss far from its cause: refused where it is made. (An
// empty data set makes a plan of no batches, so a training loop over it runs no step.)
TEST(BatchPlan, AnEmptyBatchIsAnError) {
  tensor<float, shape<dyn, 2>> source({3, 2}, 1.0f), out;
  try {
    gather_rows(source, std::span<const std::size_t>(), out);
    ADD_FAILURE() << "no value_error";
  } catch (const value_error& e) {
    EXPECT_NE(std::string(e.what()).find("empty batch"), std::string::npos) << e.what();
  }
}

TEST(GatherRows, CopiesTheChosenRowsAndReusesStorage) {
  std::mt19937_64 rng(8);
  tensor<float, shape<dyn, 3, 2>> source({17, 3, 2}, uninitialized);
  for (float& x : source) x = float(rng() % 1000);
  const batch_plan plan(17, 5, std::uint64_t(4));
  tensor<float, shape<dyn, 3, 2>> out;
  const float* storage = nullptr;
  for (std::size_t b = 0; b < plan.batch_count(); ++b) {
    const auto rows = plan.batch(b);
    gather_rows(source, rows, out);
    ASSERT_EQ(out.extents(), (extents_t<3>{rows.size(), 3, 2}));
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (std::size_t j = 0; j < 3; ++j)
        for (std::size_t k = 0; k < 2; ++k) EXPECT_EQ(out(i, j, k), source(rows[i], j, k));
    if (b == 1) {
      EXPECT_EQ(out.data(), storage) << "a batch of the same size reallocated";
    }
    storage = out.data();
  }
  const std::size_t bad[] = {17};
  EXPECT_THROW(gather_rows(source, std::span<const std::size_t>(bad), out), value_error);

  const auto view = row_range(source, 3, 7);
  EXPECT_EQ(view.extents(), (extents_t<3>{4, 3, 2}));
  EXPECT_EQ(view(2, 1, 1), source(5, 1, 1));
  EXPECT_THROW((void)row_range(source, 5, 18), value_error);
}

TEST(ImageBatches, LoadBatchTakesImagesAndLabelsTogether) {
  image_split split;
  split.rows = 2;
  split.cols = 2;
  split.images = tensor<float, shape<dyn, dyn>>({9, 4}, uninitialized);
  split.labels = tensor<std::int32_t, shape<dyn>>({9}, uninitialized);
  for (std::size_t i = 0; i < 9; ++i) {
    split.labels[i] = std::int32_t(i);
    for (std::size_t p = 0; p < 4; ++p) split.images(i, p) = float(10 * i + p);
  }
  const batch_plan plan(split.size(), 4, std::uint64_t(3));
  image_batch batch;
  std::vector<int> seen(9, 0);
  for (std::size_t b = 0; b < plan.batch_count(); ++b) {
    load_batch(split, plan, b, batch);
    ASSERT_EQ(batch.labels.size(), plan.batch(b).size());
    for (std::size_t i = 0; i < batch.labels.size(); ++i) {
      const auto label = static_cast<std::size_t>(batch.labels[i]);
      ++seen[label];
      for (std::size_t p = 0; p < 4; ++p) EXPECT_EQ(batch.images(i, p), float(10 * label + p));
    }
  }
  EXPECT_EQ(seen, std::vector<int>(9, 1));
}

TEST(Standardize, UsesStatisticsOfTheGivenDataInDouble) {
  std::mt19937_64 rng(12);
  std::normal_distribution<double> normal(3.0, 0.5);
  tensor<float, shape<dyn, dyn>> train({300, 7}, uninitialized), test({50, 7}, uninitialized);
  for (float& x : train) x = float(normal(rng));
  for (float& x : test) x = float(normal(rng));
  // Reference: the textbook formulas over the float values, in long double.
  long double sum = 0, squares = 0;
  for (float x : train) sum += x;
  const long double mean = sum / train.size();
  for (float x : train) squares += (x - mean) * (x - mean);
  const long double sd = std::sqrt(squares / train.size());

  const standardization s = statistics_of(train);
  EXPECT_NEAR(s.mean, double(mean), 1e-12);
  EXPECT_NEAR(s.std, double(sd), 1e-12);
  const tensor<float, shape<dyn, dyn>> before = test;
  standardize(train, s);
  standardize(test, s);
  for (std::size_t i = 0; i < test.size(); ++i) EXPECT_NEAR(test[i], (before[i] - mean) / sd, 1e-5);
  const standardization after = statistics_of(train);
  EXPECT_NEAR(after.mean, 0.0, 1e-6);
  EXPECT_NEAR(after.std, 1.0, 1e-6);
  EXPECT_THROW(standardize(test, {0.0, 0.0}), value_error);
  EXPECT_THROW(statistics_of(tensor<float, shape<dyn>>()), value_error);
}

}  // namespace
