// The host emulator of CUDA's execution model (cuda/include/symflow/cuda/emulation/): kernels
// written as for nvcc, run as fibers, checked against float64 loops on random inputs. Each
// scheduling order gives a correct kernel's result; a kernel with a missing __syncthreads gives
// another result in reverse order; divergent warp operations, barriers not all threads reach and
// lanes outside their own mask are errors that name the kernel, block and threads, not hangs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <symflow/cuda/emulation/device_api.hpp>

namespace emu = symflow::cuda::emulation;

namespace {

struct order_guard {
  emu::run_settings saved = emu::settings();
  explicit order_guard(emu::thread_order o, std::uint64_t seed = 1) {
    emu::settings().order = o;
    emu::settings().seed = seed;
  }
  ~order_guard() { emu::settings() = saved; }
};

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}

constexpr unsigned block_threads = 128;

// A block's sum through shared memory: each thread loads a grid-strided slice, then a tree of
// halvings with a barrier between steps. `skip_barrier` leaves out the barrier after the loads,
// the classic race.
template <bool skip_barrier>
__global__ void block_sums(const float* in, std::size_t n, float* out) {
  __shared__ float partial[block_threads];
  float acc = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) acc += in[i];
  partial[threadIdx.x] = acc;
  if constexpr (!skip_barrier) __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

template <bool skip_barrier>
std::vector<float> run_block_sums(const std::vector<float>& in, unsigned blocks) {
  std::vector<float> out(blocks, -1.0f);
  emu::launch("block_sums", &block_sums<skip_barrier>, dim3(blocks), dim3(block_threads), in.data(), in.size(), out.data());
  return out;
}

double reference_block_sum(const std::vector<float>& in, unsigned blocks, unsigned b) {
  double s = 0;
  for (std::size_t i = 0; i < in.size(); ++i)
    if ((i / block_threads) % blocks == b) s += in[i];
  return s;
}

TEST(CudaEmulation, BlockReductionIsRightInEveryOrder) {
  const auto in = random_floats(block_threads * 5 * 3 + 17, 1);  // odd length: a partial last stride
  for (auto order : {emu::thread_order::forward, emu::thread_order::reverse, emu::thread_order::random}) {
    order_guard g(order, 42);
    const auto out = run_block_sums<false>(in, 5);
    for (unsigned b = 0; b < 5; ++b) EXPECT_NEAR(out[b], reference_block_sum(in, 5, b), 1e-4) << "block " << b;
  }
}

TEST(CudaEmulation, AMissingBarrierChangesTheResult) {
  const auto in = random_floats(block_threads * 2, 2);
  const double expected = reference_block_sum(in, 1, 0);
  {
    // Thread 0 runs first and adds partial[64] before thread 64 has stored it: the sum misses
    // slices, as it may on a GPU.
    order_guard g(emu::thread_order::forward);
    EXPECT_GT(std::abs(run_block_sums<true>(in, 1)[0] - expected), 1e-3) << "the race went unseen";
    EXPECT_NEAR(run_block_sums<false>(in, 1)[0], expected, 1e-4);
  }
  // Random orders catch it too, whichever way a race runs.
  int caught = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    order_guard g(emu::thread_order::random, seed);
    caught += std::abs(run_block_sums<true>(in, 1)[0] - expected) > 1e-3;
  }
  EXPECT_GE(caught, 3);
}

__global__ void warp_sums(const double* in, double* out) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  double v = in[t];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, unsigned(offset));
  if (threadIdx.x % 32 == 0) out[t / 32] = v;
}

TEST(CudaEmulation, ShuffleDownReducesEachWarp) {
  std::vector<double> in(3 * 64), out(6, -1);
  std::mt19937 gen(3);
  std::normal_distribution<double> d;
  for (auto& x : in) x = d(gen);
  order_guard g(emu::thread_order::random, 7);
  emu::launch("warp_sums", &warp_sums, dim3(3), dim3(64), in.data(), out.data());
  for (unsigned w = 0; w < 6; ++w) {
    double s = 0;
    for (unsigned l = 0; l < 32; ++l) s += in[w * 32 + l];
    EXPECT_NEAR(out[w], s, 1e-12) << "warp " << w;
  }
}

// Every shuffle form and width against its definition, lane by lane.
__global__ void shuffles(int* out) {
  const int lane = int(threadIdx.x % 32), t = int(threadIdx.x);
  out[t * 6 + 0] = __shfl_sync(0xffffffffu, 100 + lane, 5);
  out[t * 6 + 1] = __shfl_sync(0xffffffffu, 100 + lane, 3, 8);
  out[t * 6 + 2] = __shfl_up_sync(0xffffffffu, 100 + lane, 2, 16);
  out[t * 6 + 3] = __shfl_down_sync(0xffffffffu, 100 + lane, 3, 8);
  out[t * 6 + 4] = __shfl_xor_sync(0xffffffffu, 100 + lane, 5, 32);
  out[t * 6 + 5] = int(__ballot_sync(0xffffffffu, lane % 3 == 0));
}

TEST(CudaEmulation, ShufflesAndBallotFollowCudasDefinitions) {
  std::vector<int> out(64 * 6);
  order_guard g(emu::thread_order::reverse);
  emu::launch("shuffles", &shuffles, dim3(1), dim3(64), out.data());
  unsigned ballot = 0;
  for (unsigned l = 0; l < 32; l += 3) ballot |= 1u << l;
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32;
    EXPECT_EQ(out[t * 6 + 0], 105);
    EXPECT_EQ(out[t * 6 + 1], 100 + (lane & ~7) + 3);
    EXPECT_EQ(out[t * 6 + 2], 100 + ((lane % 16) < 2 ? lane : lane - 2));
    EXPECT_EQ(out[t * 6 + 3], 100 + ((lane % 8) + 3 >= 8 ? lane : lane + 3));
    EXPECT_EQ(out[t * 6 + 4], 100 + (lane ^ 5));
    EXPECT_EQ(unsigned(out[t * 6 + 5]), ballot);
  }
}

// A 20-thread block: its only warp has lanes 0-19. Lane 10's shuffle down by 16 reads lane 26,
// which does not exist: poison (NaN), as an undefined value.
__global__ void short_block(float* out) {
  out[threadIdx.x] = __shfl_down_sync(0xfffffu, float(threadIdx.x), 16);
}

TEST(CudaEmulation, ReadingALaneThatTakesNoPartGivesPoison) {
  std::vector<float> out(20);
  emu::launch("short_block", &short_block, dim3(1), dim3(20), out.data());
  EXPECT_EQ(out[2], 18.0f);
  EXPECT_TRUE(std::isnan(out[10]));
  EXPECT_EQ(out[19], 19.0f);  // 19 + 16 is past the warp's width: its own value
}

__global__ void votes_after_exit(int* out) {
  if (threadIdx.x >= 24) return;  // lanes 24-31 exit: the full mask waits only for 0-23
  out[threadIdx.x * 2] = __all_sync(0xffffffffu, threadIdx.x < 24);
  out[threadIdx.x * 2 + 1] = __any_sync(0xffffffffu, threadIdx.x == 23);
}

TEST(CudaEmulation, ExitedLanesAreLeftOutOfAMask) {
  std::vector<int> out(48, -1);
  emu::launch("votes_after_exit", &votes_after_exit, dim3(1), dim3(32), out.data());
  for (int t = 0; t < 24; ++t) {
    EXPECT_EQ(out[t * 2], 1);
    EXPECT_EQ(out[t * 2 + 1], 1);
  }
}

__global__ void divergent_shuffle(float* out) {
  float v = float(threadIdx.x);
  if (threadIdx.x < 16) v = __shfl_down_sync(0xffffffffu, v, 1);  // lanes 16-31 never join
  __syncthreads();
  out[threadIdx.x] = v;
}

TEST(CudaEmulation, ADivergentShuffleIsAnErrorNotAHang) {
  std::vector<float> out(32);
  try {
    emu::launch("divergent_shuffle", &divergent_shuffle, dim3(2), dim3(32), out.data());
    ADD_FAILURE() << "no emulation_error";
  } catch (const emu::emulation_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("can make no progress"), std::string::npos) << what;
    EXPECT_EQ(what.rfind("divergent_shuffle: block (", 0), 0u) << what;
    EXPECT_NE(what.find("__shfl_down_sync with mask 0xffffffff"), std::string::npos) << what;
    EXPECT_NE(what.find("16 threads wait at __syncthreads"), std::string::npos) << what;
  }
}

__global__ void two_barriers(int* out) {
  if (threadIdx.x % 2) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

TEST(CudaEmulation, ThreadsAtDifferentBarriersAreAnError) {
  std::vector<int> out(64);
  EXPECT_THROW(emu::launch("two_barriers", &two_barriers, dim3(1), dim3(64), out.data()), emu::emulation_error);
}

__global__ void outside_mask(int* out) { out[threadIdx.x] = __shfl_sync(0x1u, int(threadIdx.x), 0); }

TEST(CudaEmulation, ALaneOutsideItsOwnMaskIsAnError) {
  std::vector<int> out(32);
  try {
    emu::launch("outside_mask", &outside_mask, dim3(1), dim3(32), out.data());
    ADD_FAILURE() << "no emulation_error";
  } catch (const emu::emulation_error& e) {
    EXPECT_NE(std::string(e.what()).find("which the mask does not name"), std::string::npos) << e.what();
  }
}

__global__ void counting(unsigned* count, int* largest, const int* values) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(count, 1u);
  atomicMax(largest, values[t]);
}

TEST(CudaEmulation, AtomicsSeeEveryThreadOfEveryBlock) {
  std::vector<int> values(4 * 96);
  std::mt19937 gen(5);
  for (auto& v : values) v = int(gen() % 100000) - 50000;
  unsigned count = 0;
  int largest = std::numeric_limits<int>::min();
  order_guard g(emu::thread_order::random, 9);
  emu::launch("counting", &counting, dim3(4), dim3(96), &count, &largest, values.data());
  EXPECT_EQ(count, 4u * 96u);
  EXPECT_EQ(largest, *std::max_element(values.begin(), values.end()));
}

__global__ void coordinates(unsigned* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  out[block * blockDim.x * blockDim.y * blockDim.z + thread] += 1 + block * 1000 + thread;
}

TEST(CudaEmulation, EveryThreadOfA3dGridRunsOnceWithItsCoordinates) {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  std::vector<unsigned> out(12 * 24, 0);
  order_guard g(emu::thread_order::random, 11);
  emu::launch("coordinates", &coordinates, grid, block, out.data());
  for (unsigned b = 0; b < 12; ++b)
    for (unsigned t = 0; t < 24; ++t) EXPECT_EQ(out[b * 24 + t], 1 + b * 1000 + t);
}

__global__ void throws_in_one_thread(int* out) {
  if (threadIdx.x == 7) throw std::runtime_error("thread 7 failed");
  __syncthreads();
  out[threadIdx.x] = 1;
}

TEST(CudaEmulation, AnExceptionInAThreadEndsTheLaunch) {
  std::vector<int> out(32);
  EXPECT_THROW(emu::launch("throws", &throws_in_one_thread, dim3(1), dim3(32), out.data()), std::runtime_error);
  // The emulator is usable afterwards.
  std::vector<float> in(block_threads, 1.0f);
  EXPECT_EQ(run_block_sums<false>(in, 1)[0], float(block_threads));
}

TEST(CudaEmulation, BadLaunchesAreRefused) {
  std::vector<float> out(1);
  EXPECT_THROW(emu::launch("short_block", &short_block, dim3(1), dim3(2048), out.data()), emu::emulation_error);
  EXPECT_THROW(emu::launch("short_block", &short_block, dim3(0), dim3(32), out.data()), emu::emulation_error);
  EXPECT_THROW(__syncthreads(), emu::emulation_error);  // outside a launch
}

}  // namespace
