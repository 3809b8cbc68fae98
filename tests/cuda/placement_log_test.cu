// The placement log: fusion groups described from the symbolic nodes (host only, runs without a GPU),
// and each distinct kernel printed once with its launch shape and device (needs a GPU).
#include <gtest/gtest.h>

#include <string>

#include <symflow/cuda.hpp>
#include <symflow/ops/all.hpp>

#include "gpu_harness.cuh"

namespace symflow_cuda_test {
namespace {
using namespace symflow;

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Restores the process-wide switch whatever a test did with it.
struct placement_log_off_afterwards {
  ~placement_log_off_afterwards() { cuda::set_placement_log(false); }
};

TEST(CudaPlacementLog, DescribesFusionGroupsFromTheSymbolicNodes) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto W = variable<"W", float, shape<3, 4>>();
  auto b = variable<"b", float, shape<4>>();
  const tensor<float, shape<dyn, 3>> xh(extents_t<2>{2, 3}, 1.0f);
  const tensor<float, shape<3, 4>> Wh(extents_t<2>{3, 4}, 1.0f);
  const tensor<float, shape<4>> bh(extents_t<1>{4}, 1.0f);
  // Host feeds: building the evaluator uploads nothing, so no device is needed.
  const auto dense = scope("dense1", [&] { return relu(matmul(x, W) + b); });
  EXPECT_EQ(cuda::root_group_description(dense, x = xh, W = Wh, b = bh), "dense1/relu(dense1/add([dense1/matmul], b))");
  EXPECT_EQ(cuda::root_group_description(sum(exp(x) * 2.0f, axes<1>), x = xh), "sum{axes=[1]}(mul(exp(x), 2))");
  EXPECT_EQ(cuda::root_group_description(transpose(x) * 0.5f, x = xh), "mul(transpose(x), 0.5)");
  EXPECT_EQ(cuda::root_group_description(x - sum(x, axes<1>, keepdims), x = xh),
            "sub(x, [sum{axes=[1], keepdims}])");
  EXPECT_EQ(cuda::root_group_description(matmul(x, W), x = xh, W = Wh), "matmul(x, W)");
}

TEST(CudaPlacementLog, SwitchesOnAndOff) {
  placement_log_off_afterwards restore;
  cuda::set_placement_log(true);
  EXPECT_TRUE(cuda::placement_log_enabled());
  cuda::set_placement_log(false);
  EXPECT_FALSE(cuda::placement_log_enabled());
}

TEST_F(Gpu, PlacementLogPrintsEachKernelOnce) {
  placement_log_off_afterwards restore;
  auto a = placeholder<"a", float, shape<dyn>>();
  auto b = placeholder<"b", float, shape<dyn>>();
  auto c = placeholder<"c", float, shape<dyn>>();
  auto d = placeholder<"d", float, shape<dyn>>();
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto W = variable<"W", float, shape<3, 4>>();
  const tensor<float, shape<dyn>> v(extents_t<1>{1 << 16}, 0.25f);
  const tensor<float, shape<dyn, 3>> xh(extents_t<2>{5, 3}, 1.0f);
  const tensor<float, shape<3, 4>> Wh(extents_t<2>{3, 4}, 1.0f);
  const auto dv = cuda::to_device(v);
  const auto dx = cuda::to_device(xh);
  const auto dW = cuda::to_device(Wh);

  cuda::set_placement_log(true);
  cuda::reset_placement_log();
  testing::internal::CaptureStderr();
  for (int k = 0; k < 3; ++k)
    (void)cuda::eval(a * b + c * sin(d), cuda::feed(a, dv), cuda::feed(b, dv), cuda::feed(c, dv), cuda::feed(d, dv));
  cuda::options unfused;
  unfused.gemm_epilogues = false;  // the GEMM and its relu as two kernels, each logged (epilogue_test covers the other)
  (void)cuda::eval(scope("dense", [&] { return relu(matmul(x, W)); }), cuda::feed(x, dx), cuda::feed(W, dW), unfused);
  (void)cuda::eval(sum(a * b), cuda::feed(a, dv), cuda::feed(b, dv));
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  const std::string log = testing::internal::GetCapturedStderr();

  EXPECT_EQ(count_of(log, "map_dense_kernel, grid 64, block 256, on " + cuda::device_description() +
                              ", device 0: add(mul(a, b), mul(c, sin(d))) -> f32[65536]"),
            1u)
      << log;
  EXPECT_EQ(count_of(log, "kernel op dense/matmul(x, W) -> f32[5,4], cuBLAS GEMM (FP32)"), 1u) << log;
  EXPECT_EQ(count_of(log, "dense/relu([dense/matmul]) -> f32[5,4]"), 1u) << log;
  EXPECT_EQ(count_of(log, "reduce_rows_kernel"), 1u) << log;
  EXPECT_NE(log.find("sum(mul(a, b))"), std::string::npos) << log;
  // Every line printed once, and the log is quiet once switched off.
  EXPECT_EQ(count_of(log, "symflow placement:"), count_of(log, "\n")) << log;
  cuda::set_placement_log(false);
  testing::internal::CaptureStderr();
  (void)cuda::eval(a * 2.0f, cuda::feed(a, dv));
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace symflow_cuda_test
