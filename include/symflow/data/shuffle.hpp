#pragma once
// Shuffling that gives the same order on every platform and standard library for the same seed.
//
// std::shuffle and std::uniform_int_distribution are implementation-defined, so a seed would give
// different orders with libstdc++, libc++ and MSVC. Only the engine's output is specified by the
// standard (std::mt19937_64), so the rest is written out here:
//   - draw(bound): take 64-bit words w from the engine until w < 2^64 - (2^64 mod bound), then
//     return w mod bound (rejection keeps every value in [0, bound) equally likely);
//   - shuffled_indices(n, seed): start from 0, 1, ..., n-1; for i = n-1 down to 1, swap element i
//     with element draw(i + 1) (Fisher-Yates), with the engine seeded by std::mt19937_64(seed).
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

namespace symflow {

// A uniformly distributed integer in [0, bound), bound > 0, by the rejection rule described above.
inline std::uint64_t uniform_below(std::mt19937_64& engine, std::uint64_t bound) {
  // 2^64 mod bound, computed without 128-bit arithmetic: (2^64 - bound) mod bound.
  const std::uint64_t excess = (0 - bound) % bound;
  const std::uint64_t limit = 0 - excess;  // 2^64 - excess; 0 stands for 2^64 (no rejection)
  for (;;) {
    const std::uint64_t word = engine();
    if (limit == 0 || word < limit) return word % bound;
  }
}

// A permutation of 0..n-1 that depends only on n and seed.
inline std::vector<std::size_t> shuffled_indices(std::size_t n, std::uint64_t seed) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::mt19937_64 engine(seed);
  for (std::size_t i = n; i-- > 1;) std::swap(order[i], order[uniform_below(engine, i + 1)]);
  return order;
}

// A seed for one epoch derived from a run's seed, so every epoch sees a different order while the
// whole run stays reproducible (SplitMix64's finaliser mixes the two; nearby inputs give unrelated seeds).
constexpr std::uint64_t epoch_seed(std::uint64_t run_seed, std::uint64_t epoch) {
  std::uint64_t z = run_seed + 0x9E3779B97F4A7C15ull * (epoch + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace symflow
