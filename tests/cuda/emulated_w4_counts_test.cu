// W4 (one SGD step of the MLP 784-1024(relu)-10 with softmax cross-entropy, batch 256) counted under
// host emulation, where every kernel launch, GEMM and copy is visible (emulation/model.hpp,
// statistics()): kernels, GEMMs, their flops and the bytes the runtime copies and sets per step,
// uncaptured and replayed as a CUDA graph. The counts are the step's launch-latency floor on a GPU;
// the test holds them to what the backend achieves (docs/cuda.md, "W4 under emulation") so that a
// change that adds kernels or GEMMs to the step fails here. Emulation only: nvcc's builds lack the
// counters.
#if defined(SYMFLOW_CUDA_HOST_EMULATION)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <tuple>

#include <symflow/symflow.hpp>
#include <symflow/cuda.hpp>

#include "training_model.hpp"

namespace symflow_cuda_test {
namespace {

namespace cuda = symflow::cuda;
namespace emu = symflow::cuda::emulation;
using namespace symflow;

// A deterministic value in [lo, hi) per element (a hash of index and seed).
__global__ void hashed_fill(float* p, std::size_t n, unsigned seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned v = unsigned(i) * 747796405u + seed * 2891336453u;
    v ^= v >> 13;
    v *= 0x5bd1e995u;
    v ^= v >> 15;
    p[i] = lo + (hi - lo) * float(v >> 8) / float(1u << 24);
  }
}
__global__ void hashed_labels(std::int32_t* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = std::int32_t((unsigned(i) * 2654435761u >> 7) % 10u);
}

struct counts {
  std::uint64_t kernels, gemms, gemm_flops, copies, copied, sets, set;
};
counts take() {
  auto& s = emu::statistics();
  counts c{s.kernels.load(), s.gemms.load(), s.gemm_flops.load(), s.copies.load(), s.copied_bytes.load(),
           s.sets.load(), s.set_bytes.load()};
  s.reset();
  return c;
}

TEST(EmulatedW4, KernelsGemmsAndTrafficPerStep) {
  constexpr std::size_t batch = 256;
  const training::mlp_model mlp;
  const auto [dW1, db1, dW2, db2] = mlp.gradients();
  const auto loss = mlp.loss();
  constexpr float lr = 0.05f;
  cuda::stream s;
  cuda::device_params store;
  store.set("W1", tensor<float, shape<784, 1024>>{}, s);
  store.set("b1", tensor<float, shape<1024>>{}, s);
  store.set("W2", tensor<float, shape<1024, 10>>{}, s);
  store.set("b2", tensor<float, shape<10>>{}, s);
  const auto fill = [&](float* p, std::size_t n, unsigned seed, float scale) {
    SYMFLOW_LAUNCH(64, 256, 0, s.get(), hashed_fill)(p, n, seed, -scale, scale);
  };
  fill(static_cast<float*>(store.at("W1").bytes.data()), 784 * 1024, 11, 1.0f / 28.0f);
  fill(static_cast<float*>(store.at("W2").bytes.data()), 1024 * 10, 13, 1.0f / 32.0f);
  cuda::device_tensor<float, shape<dyn, 784>> x(extents_t<2>{batch, 784}, s);
  cuda::device_tensor<std::int32_t, shape<dyn>> y(extents_t<1>{batch}, s);
  SYMFLOW_LAUNCH(64, 256, 0, s.get(), hashed_fill)(x.data(), x.size(), 15, 0.0f, 1.0f);
  SYMFLOW_LAUNCH(4, 64, 0, s.get(), hashed_labels)(y.data(), batch);
  const auto step = [&] {
    cuda::eval_into(std::tuple{store.view<float, shape<784, 1024>>("W1"), store.view<float, shape<1024>>("b1"),
                               store.view<float, shape<1024, 10>>("W2"), store.view<float, shape<10>>("b2")},
                    mlp.W1 - lr * dW1, mlp.b1 - lr * db1, mlp.W2 - lr * dW2, mlp.b2 - lr * db2, cuda::feed(mlp.x, x),
                    cuda::feed(mlp.y, y), store, cuda::options{s, false});
  };
  const auto loss_now = [&] {
    return cuda::eval(loss, cuda::feed(mlp.x, x), cuda::feed(mlp.y, y), store, cuda::options{s, false}).to_host(s)[0];
  };
  const float before = loss_now();
  step();  // the first step creates handles and fills the memory pool
  take();
  step();
  const counts uncaptured = take();
  const cuda::graph g = cuda::graph::capture(s, [&] { step(); });
  take();
  g.launch(s);
  s.synchronize();
  const counts replayed = take();
  const float after = loss_now();

  std::printf("W4 under emulation, batch %zu, one step: %llu kernels, %llu GEMMs (%.1f MFLOP), %llu copies "
              "(%llu bytes), %llu memsets (%llu bytes); as a graph: %zu nodes, %llu kernels, %llu GEMMs; "
              "loss %.4f -> %.4f after 3 steps\n",
              batch, (unsigned long long)uncaptured.kernels, (unsigned long long)uncaptured.gemms,
              double(uncaptured.gemm_flops) / 1e6, (unsigned long long)uncaptured.copies,
              (unsigned long long)uncaptured.copied, (unsigned long long)uncaptured.sets,
              (unsigned long long)uncaptured.set, g.node_count(), (unsigned long long)replayed.kernels,
              (unsigned long long)replayed.gemms, before, after);
  // The step's GEMMs: forward x W1 and h W2, backward dW2 = h^T g, dh = g W2^T, dW1 = x^T dh.
  EXPECT_EQ(uncaptured.gemms, 5u);
  EXPECT_EQ(uncaptured.gemm_flops, 2ull * batch * (784 * 1024 * 2 + 1024 * 10 * 3));
  // A replayed graph does what the uncaptured step does.
  EXPECT_EQ(replayed.kernels, uncaptured.kernels);
  EXPECT_EQ(replayed.gemms, uncaptured.gemms);
  // A graph node per kernel, GEMM, copy and memset, and one per allocation made in the capture
  // (the emulator poisons it again at each replay).
  EXPECT_GE(g.node_count(), std::size_t(uncaptured.kernels + uncaptured.gemms + uncaptured.copies + uncaptured.sets));
  EXPECT_LE(g.node_count(), std::size_t(uncaptured.kernels + uncaptured.gemms + uncaptured.copies + uncaptured.sets) + 4);
  // 20 kernels on 2026-12-03 (docs/cuda.md): the forward pass's bias + ReLU and softmax rows, the
  // loss, its adjoints, the column sums of the biases' gradients and the four SGD updates.
  EXPECT_LE(uncaptured.kernels, 20u) << "the step launches more kernels than it did";
  EXPECT_TRUE(std::isfinite(after));
  EXPECT_LT(after, before);
}

}  // namespace
}  // namespace symflow_cuda_test
#endif
