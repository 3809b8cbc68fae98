// CPU evaluation: allocation behaviour (counted by replacing the global operator new/delete in this
// executable), output reuse, runtime shape and value errors, to_string, node_info, and determinism
// across thread counts.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <symflow/runtime/interpreter.hpp>
#include <symflow/ir/to_graph.hpp>
#include <symflow/symflow.hpp>

// ---------------------------------------------------------------------------------------------
// Allocation counter: every form of global operator new counts while counting is on.

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
std::atomic<void*> last_allocation{nullptr};
std::atomic<std::size_t> last_allocation_size{0};
std::atomic<long> large_allocations{0};  // of at least 64 KiB: tensors, not bookkeeping

void note(void* p, std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (n >= (std::size_t(1) << 16)) large_allocations.fetch_add(1, std::memory_order_relaxed);
    last_allocation.store(p, std::memory_order_relaxed);
    last_allocation_size.store(n, std::memory_order_relaxed);
  }
}
void* plain_allocate(std::size_t n) noexcept {
  void* p = std::malloc(n ? n : 1);
  if (p) note(p, n);
  return p;
}
void* aligned_allocate(std::size_t n, std::align_val_t a) noexcept {
  void* p = nullptr;
  const std::size_t alignment = std::max(std::size_t(a), sizeof(void*));
  if (posix_memalign(&p, alignment, n ? n : 1) != 0) return nullptr;
  note(p, n);
  return p;
}
template <class P>
P or_throw(P p) {
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return or_throw(plain_allocate(n)); }
void* operator new[](std::size_t n) { return or_throw(plain_allocate(n)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return plain_allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return plain_allocate(n); }
void* operator new(std::size_t n, std::align_val_t a) { return or_throw(aligned_allocate(n, a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return or_throw(aligned_allocate(n, a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return aligned_allocate(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return aligned_allocate(n, a);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

using namespace symflow;

namespace {

// Counts the allocations made between construction and stop() (or destruction).
class allocation_count {
 public:
  allocation_count() {
    allocations.store(0);
    large_allocations.store(0);
    last_allocation.store(nullptr);
    counting.store(true);
  }
  ~allocation_count() { counting.store(false); }
  long stop() {
    counting.store(false);
    return allocations.load();
  }
};

// These tests count operator new calls: the block cache (core/block_cache.hpp) would serve a
// repeated evaluation's tensors without one, so it is off here except in the tests that are about it.
class block_cache_off : public ::testing::Environment {
 public:
  void SetUp() override { set_block_cache_capacity(0); }
};
const auto* const cache_off = ::testing::AddGlobalTestEnvironment(new block_cache_off);

class block_cache_capacity_guard {
 public:
  explicit block_cache_capacity_guard(std::size_t bytes) : saved_(block_cache_capacity()) { set_block_cache_capacity(bytes); }
  ~block_cache_capacity_guard() { set_block_cache_capacity(saved_); }
  block_cache_capacity_guard(const block_cache_capacity_guard&) = delete;
  block_cache_capacity_guard& operator=(const block_cache_capacity_guard&) = delete;

 private:
  std::size_t saved_;
};

// Sets the OpenMP thread count for a scope.
class threads_guard {
 public:
  explicit threads_guard(int n) {
#if defined(_OPENMP)
    saved_ = omp_get_max_threads();
    omp_set_num_threads(n);
#else
    (void)n;
#endif
  }
  ~threads_guard() {
#if defined(_OPENMP)
    omp_set_num_threads(saved_);
#endif
  }

 private:
  int saved_ = 1;
};

template <class T>
tensor<T, shape<dyn>> random_vector(std::size_t n, unsigned seed, T lo = T(-2), T hi = T(2)) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<T> dist(lo, hi);
  tensor<T, shape<dyn>> t(extents_t<1>{n}, uninitialized);
  for (auto& x : t) {
    do x = dist(rng);
    while (x == T(0));
  }
  return t;
}

template <class F>
std::string what_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "in: " << (haystack)

constexpr std::size_t small_n = 1000;
constexpr std::size_t large_n = (std::size_t(1) << 20) + 13;  // past the parallel threshold, odd tail
static_assert(large_n > cpu::parallel_threshold);

// W1 = a*b + c*sin(d): the reference, computed independently in double.
double w1_reference(float a, float b, float c, float d) {
  return double(a) * double(b) + double(c) * std::sin(double(d));
}

struct w1_inputs {
  tensor<float, shape<dyn>> a, b, c, d;
  explicit w1_inputs(std::size_t n)
      : a(random_vector<float>(n, 1)), b(random_vector<float>(n, 2)), c(random_vector<float>(n, 3)),
        d(random_vector<float>(n, 4, -6.f, 6.f)) {}
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// (a) Allocations

// An op node keeps its operands in one heap block that every copy shares: building allocates one
// block per op node, copying allocates nothing, and a value used twice is one object.
TEST(EvalAllocations, CopyingExpressionsAllocatesNothing) {
  auto a = placeholder<"a", float, shape<dyn>>();
  auto b = placeholder<"b", float, shape<dyn>>();
  auto c = placeholder<"c", float, shape<dyn>>();
  auto d = placeholder<"d", float, shape<dyn>>();
  auto x = placeholder<"x", float, shape<dyn, 784>>();
  auto W = variable<"W", float, shape<784, 10>>();
  auto bias = variable<"bias", float, shape<10>>();
  allocation_count building;
  auto w1 = a * b + c * sin(d);
  EXPECT_EQ(building.stop(), 4) << "one block per op node: *, sin, *, +";
  auto total = sum(w1);
  auto layer = scope("dense1", [&] { return relu(matmul(x, W) + bias); });
  auto probs = softmax(layer);
  auto loss = mean(-log_softmax(layer), keepdims);
  auto misc = where(a > b, exp(a) / (1.f + square(c)), maximum(d, 0.5f) - tanh(b));
  auto views = transpose(reshape<shape<dyn, 2>>(x)) * 2.f;
  allocation_count copying;
  const auto copies = std::tuple{w1, total, layer, probs, loss, misc, views, w1 * w1};
  EXPECT_EQ(copying.stop(), 1) << "only the new node w1 * w1";
  const auto& square_node = std::get<7>(copies);
  EXPECT_NE(node_identity(w1), nullptr);
  EXPECT_EQ(node_identity(std::get<0>(square_node.args())), node_identity(w1));
  EXPECT_EQ(node_identity(std::get<1>(square_node.args())), node_identity(w1));
  EXPECT_NE(node_identity(a * b), node_identity(a * b)) << "nodes built separately are distinct objects";
}

TEST(EvalAllocations, FusedChainAllocatesOnlyTheOutput) {
  auto a = placeholder<"a", float, shape<dyn>>();
  auto b = placeholder<"b", float, shape<dyn>>();
  auto c = placeholder<"c", float, shape<dyn>>();
  auto d = placeholder<"d", float, shape<dyn>>();
  const auto w1 = a * b + c * sin(d);
  for (std::size_t n : {small_n, large_n}) {
    const w1_inputs in(n);
    (void)eval(w1, a = in.a, b = in.b, c = in.c, d = in.d);  // warm up (OpenMP's thread pool)
    allocation_count count;
    const auto r = eval(w1, a = in.a, b = in.b, c = in.c, d = in.d);
    const long allocated = count.stop();
    EXPECT_EQ(allocated, 1) << "n = " << n;
    EXPECT_EQ(last_allocation.load(), static_cast<const void*>(r.data())) << "the one block is the output";
    EXPECT_EQ(last_allocation_size.load(), detail::block_cache::size_class(n * sizeof(float))) << "rounded to its size class";
    ASSERT_EQ(r.size(), n);
    for (std::size_t i = 0; i < n; i += (n > 5000 ? 997 : 1))
      EXPECT_NEAR(r[i], w1_reference(in.a[i], in.b[i], in.c[i], in.d[i]), 1e-5) << i;
    EXPECT_NEAR(r[n - 1], w1_reference(in.a[n - 1], in.b[n - 1], in.c[n - 1], in.d[n - 1]), 1e-5);
  }
}

TEST(EvalAllocations, FusedChainWithThreadsAllocatesOnlyTheOutput) {
#if !defined(_OPENMP)
  GTEST_SKIP() << "built without OpenMP";
#else
  threads_guard threads(4);
  ASSERT_GT(cpu::max_threads(), 1);
  auto a = placeholder<"a", float, shape<dyn>>();
  auto b = placeholder<"b", float, shape<dyn>>();
  auto c = placeholder<"c", float, shape<dyn>>();
  auto d = placeholder<"d", float, shape<dyn>>();
  const auto w1 = a * b + c * sin(d);
  const w1_inputs in(large_n);
  (void)eval(w1, a = in.a, b = in.b, c = in.c, d = in.d);
  {
    allocation_count count;
    const auto r = eval(w1, a = in.a, b = in.b, c = in.c, d = in.d);
    EXPECT_EQ(count.stop(), 1);
    EXPECT_EQ(last_allocation.load(), static_cast<const void*>(r.data()));
  }
  {
    const auto total = sum(w1);
    (void)eval(total, a = in.a, b = in.b, c = in.c, d = in.d);
    allocation_count count;
    const auto s = eval(total, a = in.a, b = in.b, c = in.c, d = in.d);
    EXPECT_EQ(count.stop(), 1);
    EXPECT_EQ(last_allocation.load(), static_cast<const void*>(s.data()));
    double ref = 0;
    for (std::size_t i = 0; i < large_n; ++i) ref += w1_reference(in.a[i], in.b[i], in.c[i], in.d[i]);
    EXPECT_NEAR(s[0], ref, 1e-6 * double(large_n) + 1e-3);
  }
#endif
}

TEST(EvalAllocations, FusedChainFollowedBySumAllocatesOnlyTheOutput) {
  auto a = placeholder<"a", float, shape<dyn>>();
  auto b = placeholder<"b", float, shape<dyn>>();
  auto c = placeholder<"c", float, shape<dyn>>();
  auto d = placeholder<"d", float, shape<dyn>>();
  const auto loss = sum(a * b + c * sin(d));
  static_assert(decltype(loss)::rank == 0);
  for (std::size_t n : {small_n, large_n}) {
    const w1_inputs in(n);
    (void)eval(loss, a = in.a, b = in.b, c = in.c, d = in.d);
    allocation_count count;
    const auto s = eval(loss, a = in.a, b = in.b, c = in.c, d = in.d);
    const long allocated = count.stop();
    EXPECT_EQ(allocated, 1) << "n = " << n;
    EXPECT_EQ(last_allocation.load(), static_cast<const void*>(s.data()));
    double ref = 0;
    for (std::size_t i = 0; i < n; ++i) ref += w1_reference(in.a[i], in.b[i], in.c[i], in.d[i]);
    EXPECT_NEAR(s[0], ref, 1e-6 * double(n) + 1e-3) << "n = " << n;
  }
}

TEST(EvalAllocations, BroadcastChainAndMeanAllocateOnlyTheOutput) {
  auto x = placeholder<"x", float, shape<dyn, dyn>>();
  auto row = placeholder<"row", float, shape<dyn>>();
  auto col = placeholder<"col", float, shape<dyn, 1>>();
  const auto y = exp(x * row - col) + 1.f;
  const std::size_t rows = 300, cols = 257;  // 77100 elements: threaded
  tensor<float, shape<dyn, dyn>> xv(extents_t<2>{rows, cols});
  tensor<float, shape<dyn, 1>> cv(extents_t<2>{rows, 1});
  const auto rv = random_vector<float>(cols, 5, -1.f, 1.f);
  const auto flat = random_vector<float>(rows * cols, 6, -1.f, 1.f);
  std::copy(flat.begin(), flat.end(), xv.begin());
  const auto cflat = random_vector<float>(rows, 7, -1.f, 1.f);
  std::copy(cflat.begin(), cflat.end(), cv.begin());
  (void)eval(y, x = xv, row = rv, col = cv);
  {
    allocation_count count;
    const auto r = eval(y, x = xv, row = rv, col = cv);
    EXPECT_EQ(count.stop(), 1);
    for (std::size_t i = 0; i < rows; i += 7)
      for (std::size_t j = 0; j < cols; j += 3)
        EXPECT_NEAR(r(i, j), std::exp(double(xv(i, j)) * rv(j) - cv(i, 0)) + 1.0, 1e-5 * r(i, j));
  }
  {
    const auto average = mean(y);
    allocation_count count;
    const auto m = eval(average, x = xv, row = rv, col = cv);
    EXPECT_EQ(count.stop(), 1);
    double ref = 0;
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) ref += std::exp(double(xv(i, j)) * rv(j) - cv(i, 0)) + 1.0;
    EXPECT_NEAR(m[0], ref / double(rows * cols), 1e-4);
  }
}

// The graph interpreter keeps its intermediates' storage between runs (runtime/buffer_pool.hpp):
// a second run with the same extents allocates no tensor, and reused storage gives the same results,
// also after a run with other extents.
TEST(EvalAllocations, InterpreterReusesIntermediatesBetweenRuns) {
  auto x = placeholder<"x", float, shape<dyn, 64>>();
  auto W1 = variable<"W1", float, shape<64, 256>>();
  auto W2 = variable<"W2", float, shape<256, 32>>();
  const auto h = matmul(x, W1);                    // a kernel's output: 128 KiB for 128 rows
  const auto y = matmul(tanh(h) * h + h, W2);      // a fused pass stored for the second matmul
  const graph g = to_graph(y);
  params store;
  tensor<float, shape<64, 256>> w1;
  tensor<float, shape<256, 32>> w2;
  const auto r1 = random_vector<float>(w1.size(), 11, -0.2f, 0.2f), r2 = random_vector<float>(w2.size(), 12, -0.2f, 0.2f);
  std::copy(r1.begin(), r1.end(), w1.begin());
  std::copy(r2.begin(), r2.end(), w2.begin());
  store.set("W1", w1);
  store.set("W2", w2);
  interpreter run(g);
  std::vector<runtime_tensor> out;
  for (std::size_t rows : {128u, 128u, 37u, 128u}) {
    tensor<float, shape<dyn, 64>> xv(extents_t<2>{rows, 64});
    const auto rx = random_vector<float>(xv.size(), 13 + rows, -1.f, 1.f);
    std::copy(rx.begin(), rx.end(), xv.begin());
    const runtime_feeds feeds{{"x", runtime_tensor(xv)}};
    const bool warm = rows == 128 && !out.empty();  // the pool holds 128-row storage from the first run
    allocation_count count;
    run.run_into(out, feeds, &store);
    count.stop();
    if (warm) EXPECT_EQ(large_allocations.load(), 0) << "a second run with the same extents allocates no tensor";
    const auto expected = eval(y, x = xv, store);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].extents(), runtime_extents({rows, 32}));
    const float* got = out[0].data<float>();
    for (std::size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(got[i], expected.data()[i], 1e-4f * (1 + std::abs(expected.data()[i]))) << rows << " rows, element " << i;
  }
}

// The block cache: a training loop's repeated evaluation gets its tensors' storage back without
// asking the system (whose fresh pages would fault on first write), within the cache's bounds.
TEST(BlockCache, RepeatedEvaluationReusesTheOutputsBlock) {
  const block_cache_capacity_guard on(std::size_t(64) << 20);
  auto a = placeholder<"a", float, shape<dyn>>();
  auto b = placeholder<"b", float, shape<dyn>>();
  const auto y = a * b + sin(a);
  const std::size_t n = 100003;  // 400 KB: a kept size (odd, so the class rounds up)
  const auto at = random_vector<float>(n, 21), bt = random_vector<float>(n, 22);
  const void* first = nullptr;
  {
    const auto r = eval(y, a = at, b = bt);
    first = r.data();
  }
  EXPECT_GE(block_cache_held_bytes(), n * sizeof(float)) << "the freed output is kept";
  allocation_count count;
  const auto r = eval(y, a = at, b = bt);
  count.stop();
  EXPECT_EQ(large_allocations.load(), 0) << "the second evaluation takes the kept block";
  EXPECT_EQ(static_cast<const void*>(r.data()), first);
  for (std::size_t i = 0; i < n; i += 101)  // the values of this evaluation, against float64
    ASSERT_NEAR(r[i], double(at[i]) * bt[i] + std::sin(double(at[i])), 1e-5) << i;
}

TEST(BlockCache, SizeClassesWasteAtMostAnEighth) {
  using detail::block_cache;
  EXPECT_EQ(block_cache::size_class(100), 100u) << "small blocks are not rounded";
  EXPECT_EQ(block_cache::size_class(block_cache::smallest_kept), block_cache::smallest_kept);
  std::mt19937_64 engine(5);
  for (int i = 0; i < 2000; ++i) {
    const std::size_t bytes = block_cache::smallest_kept + engine() % (std::size_t(1) << 32);
    const std::size_t c = block_cache::size_class(bytes);
    ASSERT_GE(c, bytes);
    ASSERT_LE(c - bytes, bytes / 8) << bytes;
    ASSERT_EQ(block_cache::size_class(c), c) << "a class is its own class";
  }
}

TEST(BlockCache, HoldsNoMoreThanItsCapacity) {
  const block_cache_capacity_guard on(std::size_t(1) << 20);  // 1 MiB
  {
    std::vector<aligned_buffer<float>> blocks;
    for (int i = 0; i < 8; ++i) blocks.emplace_back(std::size_t(64) << 10);  // 256 KiB each
  }
  EXPECT_LE(block_cache_held_bytes(), std::size_t(1) << 20) << "the oldest blocks were freed";
  EXPECT_GE(block_cache_held_bytes(), std::size_t(768) << 10);
  {
    std::vector<aligned_buffer<unsigned char>> blocks;
    for (std::size_t i = 0; i < 2 * detail::block_cache::max_blocks; ++i) blocks.emplace_back(std::size_t(64) << 10);
  }
  EXPECT_LE(block_cache_held_bytes(), std::size_t(1) << 20);
  release_cached_blocks();
  EXPECT_EQ(block_cache_held_bytes(), 0u);
  EXPECT_EQ(block_cache_capacity(), std::size_t(1) << 20) << "releasing keeps the capacity";
  {
    aligned_buffer<float> too_big(std::size_t(1) << 20);  // 4 MiB: more than the capacity
  }
  EXPECT_EQ(block_cache_held_bytes(), 0u);
}

// ---------------------------------------------------------------------------------------------
// (b) eval_into

TEST(EvalInto, ReusesTheOutputBuffer) {
  auto a = placeholder<"a", float, shape<dyn>>();
  auto b = placeholder<"b", float, shape<dyn>>();
  auto c = placeholder<"c", float, shape<dyn>>();
  auto d = placeholder<"d", float, shape<dyn>>();
  const auto w1 = a * b + c * sin(d);
  for (std::size_t n : {small_n, large_n}) {
    w1_inputs in(n);
    tensor<float, shape<dyn>> out;
    {
      allocation_count count;
      eval_into(out, w1, a = in.a, b = in.b, c = in.c, d = in.d);
      EXPECT_EQ(count.stop(), 1) << "first call allocates the output";
    }
    ASSERT_EQ(out.size(), n);
    const float* first = out.data();
    for (auto& x : in.a) x = -x;  // new inputs: the second result must differ
    {
      allocation_count count;
      eval_into(out, w1, a = in.a, b = in.b, c = in.c, d = in.d);
      EXPECT_EQ(count.stop(), 0) << "second call reuses the output";
    }
    EXPECT_EQ(out.data(), first);
    for (std::size_t i = 0; i < n; i += 101)
      EXPECT_NEAR(out[i], w1_reference(in.a[i], in.b[i], in.c[i], in.d[i]), 1e-5) << i;
  }
}

TEST(EvalInto, ReallocatesWhenTheExtentsChange) {
  auto a = placeholder<"a", double, shape<dyn>>();
  tensor<double, shape<dyn>> out(extents_t<1>{4}, -1.0);
  const auto v = random_vector<double>(9, 8);
  eval_into(out, a * 3.0, a = v);
  ASSERT_EQ(out.size(), 9u);
  for (std::size_t i = 0; i < 9; ++i) EXPECT_EQ(out[i], v[i] * 3.0);
}

TEST(EvalInto, PreallocatedOutputIsNotReplaced) {
  auto a = placeholder<"a", float, shape<dyn, 3>>();
  tensor<float, shape<dyn>> out(extents_t<1>{2}, uninitialized);
  const float* p = out.data();
  const tensor<float, shape<dyn, 3>> v{{1, 2, 3}, {4, 5, 6}};
  const auto row_sums = sum(a * a, axes<1>);
  allocation_count count;
  eval_into(out, row_sums, a = v);
  EXPECT_EQ(count.stop(), 0);
  EXPECT_EQ(out.data(), p);
  EXPECT_EQ(out[0], 14.f);
  EXPECT_EQ(out[1], 77.f);
}

// ---------------------------------------------------------------------------------------------
// (c) Runtime shape and value errors

TEST(EvalErrors, BroadcastMismatchNamesOpScopeFileAndShapes) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto y = placeholder<"y", float, shape<dyn, 4>>();
  const int line = __LINE__ + 1;
  auto z = scope("dense1", [&] { return x + y; });
  const tensor<float, shape<dyn, 4>> xv(extents_t<2>{3, 4}, 1.f), yv(extents_t<2>{5, 4}, 2.f);
  EXPECT_THROW(eval(z, x = xv, y = yv), shape_error);
  const std::string msg = what_of([&] { eval(z, x = xv, y = yv); });
  EXPECT_CONTAINS(msg, "add");
  EXPECT_CONTAINS(msg, "'dense1/add'");
  EXPECT_CONTAINS(msg, "eval_test.cpp:" + std::to_string(line));
  EXPECT_CONTAINS(msg, "[3,4]");
  EXPECT_CONTAINS(msg, "[5,4]");
  // The same mismatch deeper in a chain is still found (and nothing is evaluated first).
  auto deep = exp(z) * 2.f;
  EXPECT_THROW(eval(deep, x = xv, y = yv), shape_error);
}

TEST(EvalErrors, MatmulInnerMismatchNamesOpScopeFileAndShapes) {
  auto x = placeholder<"x", float, shape<dyn, dyn>>();
  auto W = variable<"W", float, shape<dyn, 10>>();
  const int line = __LINE__ + 1;
  auto z = scope("dense1", [&] { return matmul(x, W); });
  const tensor<float, shape<dyn, dyn>> xv(extents_t<2>{2, 3}, 1.f);
  const tensor<float, shape<dyn, 10>> wv(extents_t<2>{4, 10}, 1.f);
  EXPECT_THROW(eval(z, x = xv, W = wv), shape_error);
  const std::string msg = what_of([&] { eval(z, x = xv, W = wv); });
  EXPECT_CONTAINS(msg, "matmul");
  EXPECT_CONTAINS(msg, "'dense1/matmul'");
  EXPECT_CONTAINS(msg, "eval_test.cpp:" + std::to_string(line));
  EXPECT_CONTAINS(msg, "[2,3]");
  EXPECT_CONTAINS(msg, "[4,10]");
}

TEST(EvalErrors, NestedScopesInTheMessage) {
  auto x = placeholder<"x", float, shape<dyn>>();
  auto y = placeholder<"y", float, shape<dyn>>();
  auto z = scope("model", [&] { return scope("block2", [&] { return x * y; }); });
  const tensor<float, shape<dyn>> xv(extents_t<1>{3}, 1.f), yv(extents_t<1>{2}, 1.f);
  const std::string msg = what_of([&] { eval(z, x = xv, y = yv); });
  EXPECT_CONTAINS(msg, "'model/block2/mul'");
  EXPECT_CONTAINS(msg, "[3]");
  EXPECT_CONTAINS(msg, "[2]");
}

TEST(EvalErrors, FedValueWithWrongExtents) {
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  const int line = __LINE__ - 1;
  const tensor<float, shape<dyn, dyn>> bad(extents_t<2>{2, 5}, 1.f);
  EXPECT_THROW(eval(x * 2.f, x = bad), shape_error);
  const std::string msg = what_of([&] { eval(x * 2.f, x = bad); });
  EXPECT_CONTAINS(msg, "'x'");
  EXPECT_CONTAINS(msg, "[?,4]");
  EXPECT_CONTAINS(msg, "[2,5]");
  EXPECT_CONTAINS(msg, "eval_test.cpp:" + std::to_string(line));
  // Fully static placeholders check every extent.
  auto s = placeholder<"s", double, shape<2, 3>>();
  const tensor<double, shape<dyn, dyn>> t32(extents_t<2>{3, 2}, 1.0);
  EXPECT_THROW(eval(s + 1.0, s = t32), shape_error);
}

TEST(EvalErrors, VariablesMissingFromParams) {
  auto x = placeholder<"x", float, shape<dyn, 2>>();
  auto W = variable<"W", float, shape<2, 2>>();
  auto b = variable<"b", float, shape<2>>();
  const auto y = matmul(x, W) + b;
  const tensor<float, shape<dyn, 2>> xv{{1, 2}};
  params p;
  p.set("W", tensor<float, shape<2, 2>>{{1, 0}, {0, 1}});
  EXPECT_THROW(eval(y, x = xv, p), value_error);
  const std::string msg = what_of([&] { eval(y, x = xv, p); });
  EXPECT_CONTAINS(msg, "'b'");
  // The wrong dtype in the store is a value_error, the wrong shape a shape_error.
  p.set("b", tensor<double, shape<2>>{1, 2});
  EXPECT_THROW(eval(y, x = xv, p), value_error);
  p.set("b", tensor<float, shape<3>>{1, 2, 3});
  EXPECT_THROW(eval(y, x = xv, p), shape_error);
  p.set("b", tensor<float, shape<2>>{10, 20});
  const auto r = eval(y, x = xv, p);
  EXPECT_EQ(r(0, 0), 11.f);
  EXPECT_EQ(r(0, 1), 22.f);
  // A feed takes precedence over the store.
  const tensor<float, shape<2>> bv{-1, -2};
  const auto r2 = eval(y, x = xv, b = bv, p);
  EXPECT_EQ(r2(0, 0), 0.f);
  EXPECT_EQ(r2(0, 1), 0.f);
}

// ---------------------------------------------------------------------------------------------
// (d) to_string

TEST(ToString, IssueExample) {
  auto x = placeholder<"x", float, shape<dyn, 784>>();
  auto W = variable<"W", float, shape<784, 10>>();
  auto b = variable<"b", float, shape<10>>();
  EXPECT_EQ(to_string(matmul(x, W) + b), "add(matmul(x:f32[?,784], W:f32[784,10]), b:f32[10]) : f32[?,10]");
}

TEST(ToString, Expressions) {
  auto a = placeholder<"a", float, shape<dyn>>();
  auto b = placeholder<"b", float, shape<dyn>>();
  auto c = placeholder<"c", float, shape<dyn>>();
  auto d = placeholder<"d", float, shape<dyn>>();
  EXPECT_EQ(to_string(a * b + c * sin(d)),
            "add(mul(a:f32[?], b:f32[?]), mul(c:f32[?], sin(d:f32[?]))) : f32[?]");
  auto x = placeholder<"x", double, shape<2, 3>>();
  EXPECT_EQ(to_string(sum(x)), "sum(x:f64[2,3]) : f64[]");
  EXPECT_EQ(to_string(sum(x, axes<1>)), "sum(x:f64[2,3], axes=[1]) : f64[2]");
  EXPECT_EQ(to_string(mean(x, axes<-1>, keepdims)), "mean(x:f64[2,3], axes=[1], keepdims) : f64[2,1]");
  EXPECT_EQ(to_string(max(x, keepdims)), "max(x:f64[2,3], keepdims) : f64[1,1]");
  EXPECT_EQ(to_string(x * 2.5 - 1.0), "sub(mul(x:f64[2,3], 2.5), 1) : f64[2,3]");
  EXPECT_EQ(to_string(x < 0.0), "less(x:f64[2,3], 0) : bool[2,3]");
  EXPECT_EQ(to_string(transpose(x)), "transpose(x:f64[2,3]) : f64[3,2]");
  EXPECT_EQ(to_string(relu(-x)), "relu(neg(x:f64[2,3])) : f64[2,3]");
  auto i = placeholder<"i", std::int32_t, shape<dyn>>();
  EXPECT_EQ(to_string(i + 3), "add(i:i32[?], 3) : i32[?]");
  auto img = placeholder<"img", float, shape<dyn, 28, 28>>();
  EXPECT_EQ(to_string(reshape<shape<dyn, 784>>(img)), "reshape(img:f32[?,28,28]) : f32[?,784]");
}

// ---------------------------------------------------------------------------------------------
// (e) node_info

TEST(NodeInfo, FunctionsRecordWhereTheyAreWritten) {
  auto x = placeholder<"x", float, shape<3>>();
  const int x_line = __LINE__ - 1;
  auto e = exp(x);
  const int line = __LINE__ - 1;
  EXPECT_EQ(int(e.info.where.line()), line);
  EXPECT_CONTAINS(e.info.where.file_name(), "eval_test.cpp");
  EXPECT_EQ(e.info.location_string(), std::string(e.info.where.file_name()) + ":" + std::to_string(line));
  EXPECT_EQ(e.info.scoped_name(decltype(e)::op_name), "exp");
  EXPECT_EQ(decltype(e)::op_name, "exp");
  EXPECT_EQ(e.info.depth, 0);

  auto s = sum(x);
  EXPECT_EQ(int(s.info.where.line()), __LINE__ - 1);
  auto m = matmul(placeholder<"p", float, shape<2, 3>>(), placeholder<"q", float, shape<3, 4>>());
  EXPECT_EQ(int(m.info.where.line()), __LINE__ - 1);
  EXPECT_EQ(int(x.info.where.line()), x_line);  // placeholders too

  // Operators cannot take a location: outside any scope they have none.
  auto sum_node = x + x;
  EXPECT_FALSE(sum_node.info.has_location());
  EXPECT_EQ(sum_node.info.location_string(), "no source line: written with an operator outside any scope()");
  EXPECT_EQ(sum_node.info.scoped_name("add"), "add");
}

TEST(NodeInfo, NestedScopes) {
  auto x = placeholder<"x", float, shape<3>>();
  int exp_line = 0, inner_line = 0;
  const int outer_line = __LINE__ + 1;
  auto y = scope("outer", [&] {
    inner_line = __LINE__ + 1;
    return scope("inner", [&] {
      exp_line = __LINE__ + 1;
      auto e = exp(x);
      return e + x;
    });
  });
  static_assert(decltype(y)::kind == node_kind::elementwise);
  EXPECT_EQ(y.info.depth, 2);
  EXPECT_EQ(y.info.scoped_name(decltype(y)::op_name), "outer/inner/add");
  EXPECT_EQ(int(y.info.where.line()), inner_line) << "an operator takes the innermost scope's location";
  const auto& e = std::get<0>(y.args());
  EXPECT_EQ(e.info.scoped_name("exp"), "outer/inner/exp");
  EXPECT_EQ(int(e.info.where.line()), exp_line);
  EXPECT_NE(outer_line, inner_line);

  auto z = scope("outer", [&] { return x * 2.f; });
  EXPECT_EQ(int(z.info.where.line()), __LINE__ - 1);
  EXPECT_EQ(z.info.scoped_name("mul"), "outer/mul");

  // The scope stack is popped again.
  auto after = x - x;
  EXPECT_EQ(after.info.depth, 0);
  EXPECT_EQ(after.info.scoped_name("sub"), "sub");
}

TEST(NodeInfo, NameScopeRaii) {
  auto x = placeholder<"x", float, shape<3>>();
  {
    name_scope s1("block");
    name_scope s2("attention");
    auto n = relu(x);
    EXPECT_EQ(n.info.scoped_name("relu"), "block/attention/relu");
  }
  auto n = relu(x);
  EXPECT_EQ(n.info.scoped_name("relu"), "relu");
}

TEST(NodeInfo, ScopeDepthIsLimited) {
  std::optional<name_scope> scopes[node_info::max_scope_depth];
  for (auto& s : scopes) s.emplace("s");
  EXPECT_THROW(name_scope("one_too_many"), error);
  auto x = placeholder<"x", float, shape<>>();
  auto n = exp(x);
  EXPECT_EQ(n.info.scoped_name("exp"), "s/s/s/s/s/s/s/s/exp");
  for (auto& s : scopes) s.reset();
  EXPECT_EQ(exp(x).info.depth, 0);
}

// ---------------------------------------------------------------------------------------------
// (f) Single- vs multi-threaded results

TEST(EvalThreads, ElementwiseResultsAreIdenticalAcrossThreadCounts) {
#if !defined(_OPENMP)
  GTEST_SKIP() << "built without OpenMP";
#else
  auto a = placeholder<"a", float, shape<dyn>>();
  auto b = placeholder<"b", float, shape<dyn>>();
  auto c = placeholder<"c", float, shape<dyn>>();
  const auto y = exp(-a * a) * cos(b) + tanh(c) / (1.f + b * b) - sqrt(abs(a)) * sigmoid(c) + a * b + sin(c);
  const std::size_t n = 3 * large_n;
  const auto av = random_vector<float>(n, 21), bv = random_vector<float>(n, 22), cv = random_vector<float>(n, 23);
  tensor<float, shape<dyn>> one, many;
  {
    threads_guard t(1);
    one = eval(y, a = av, b = bv, c = cv);
  }
  for (int threads : {2, 3, 4, 7}) {
    threads_guard t(threads);
    many = eval(y, a = av, b = bv, c = cv);
    ASSERT_EQ(many.size(), n);
    EXPECT_EQ(std::memcmp(one.data(), many.data(), n * sizeof(float)), 0) << threads << " threads";
  }
  // And both match an independent reference.
  for (std::size_t i = 0; i < n; i += 4099) {
    const double x = av[i], u = bv[i], v = cv[i];
    const double ref = std::exp(-x * x) * std::cos(u) + std::tanh(v) / (1 + u * u) -
                       std::sqrt(std::abs(x)) / (1 + std::exp(-v)) + x * u + std::sin(v);
    EXPECT_NEAR(one[i], ref, 2e-5 * (1 + std::abs(ref))) << i;
  }
#endif
}

TEST(EvalThreads, BroadcastResultsAreIdenticalAcrossThreadCounts) {
#if !defined(_OPENMP)
  GTEST_SKIP() << "built without OpenMP";
#else
  // A 2-D frame that cannot collapse to one loop (the row operand broadcasts), with a row length
  // that is not a multiple of any SIMD width, so thread ranges start and end mid-row.
  auto x = placeholder<"x", float, shape<dyn, dyn>>();
  auto r = placeholder<"r", float, shape<dyn>>();
  const auto y = exp(x * r) + sin(r) * x;
  const std::size_t rows = 517, cols = 1001;
  tensor<float, shape<dyn, dyn>> xv(extents_t<2>{rows, cols});
  const auto flat = random_vector<float>(rows * cols, 31, -1.f, 1.f);
  std::copy(flat.begin(), flat.end(), xv.begin());
  const auto rv = random_vector<float>(cols, 32, -1.f, 1.f);
  tensor<float, shape<dyn, dyn>> one, many;
  {
    threads_guard t(1);
    one = eval(y, x = xv, r = rv);
  }
  for (int threads : {2, 3, 4}) {
    threads_guard t(threads);
    many = eval(y, x = xv, r = rv);
    ASSERT_EQ(many.extents(), one.extents());
    EXPECT_EQ(std::memcmp(one.data(), many.data(), rows * cols * sizeof(float)), 0) << threads << " threads";
  }
  for (std::size_t i = 0; i < rows; i += 31)
    for (std::size_t j = 0; j < cols; j += 17) {
      const double ref = std::exp(double(xv(i, j)) * rv(j)) + std::sin(double(rv(j))) * xv(i, j);
      EXPECT_NEAR(one(i, j), ref, 1e-5 * (1 + std::abs(ref)));
    }
#endif
}

TEST(EvalThreads, ThreadedSumMatchesSerialSum) {
#if !defined(_OPENMP)
  GTEST_SKIP() << "built without OpenMP";
#else
  auto a = placeholder<"a", double, shape<dyn, dyn>>();
  const std::size_t rows = 1024, cols = 300;
  tensor<double, shape<dyn, dyn>> av(extents_t<2>{rows, cols});
  const auto flat = random_vector<double>(rows * cols, 41);
  std::copy(flat.begin(), flat.end(), av.begin());
  tensor<double, shape<>> one, many;
  tensor<double, shape<dyn>> cols_one, cols_many;
  {
    threads_guard t(1);
    one = eval(sum(a * a), a = av);
    cols_one = eval(sum(a, axes<0>), a = av);
  }
  {
    threads_guard t(4);
    many = eval(sum(a * a), a = av);
    cols_many = eval(sum(a, axes<0>), a = av);
  }
  double ref = 0;
  for (double v : av) ref += v * v;
  EXPECT_NEAR(one[0], ref, 1e-9 * ref);
  EXPECT_NEAR(many[0], ref, 1e-9 * ref);
  for (std::size_t j = 0; j < cols; ++j) {
    double col = 0;
    for (std::size_t i = 0; i < rows; ++i) col += av(i, j);
    EXPECT_NEAR(cols_one[j], col, 1e-9);
    EXPECT_NEAR(cols_many[j], col, 1e-9);
  }
#endif
}
