// cuBLASLt GEMM epilogues (cuda/gemm_epilogue.hpp): act(matmul(a, b) + bias) at the root of an
// evaluation as one GEMM, against the CPU backend; the placement log and profile naming the epilogue;
// the switch that turns epilogues off; a layer next to its own gradients in one evaluation. The
// description test runs without a GPU (it is in the CudaPlacementLog suite, which ctest runs as
// cuda_test_host_parts); the others skip without a device.
#include <gtest/gtest.h>

#include <string>

#include "epilogue_cases.hpp"
#include "gpu_harness.cuh"

namespace symflow_cuda_test {
namespace {
using namespace symflow;

TEST(CudaPlacementLog, NamesTheGemmEpilogue) {
  auto x = placeholder<"x", float, shape<dyn, 3>>();
  auto W = variable<"W", float, shape<3, 4>>();
  auto b = variable<"b", float, shape<4>>();
  auto c = placeholder<"c", float, shape<dyn>>();
  auto xd = placeholder<"xd", double, shape<dyn, 3>>();
  auto Wd = variable<"Wd", double, shape<3, 4>>();
  const tensor<float, shape<dyn, 3>> xh(extents_t<2>{2, 3}, 1.0f);
  const tensor<float, shape<3, 4>> Wh(extents_t<2>{3, 4}, 1.0f);
  const tensor<float, shape<4>> bh(extents_t<1>{4}, 1.0f);
  const tensor<float, shape<dyn>> ch(extents_t<1>{1}, 1.0f);
  const tensor<double, shape<dyn, 3>> xdh(extents_t<2>{2, 3}, 1.0);
  const tensor<double, shape<3, 4>> Wdh(extents_t<2>{3, 4}, 1.0);
  const auto dense = scope("dense1", [&] { return relu(matmul(x, W) + b); });
  EXPECT_EQ(cuda::root_placement_description(dense, x = xh, W = Wh, b = bh),
            "cuBLASLt GEMM + bias + relu epilogue (FP32): dense1/relu(dense1/add(dense1/matmul(x, W), b)) -> f32[2,4]");
  EXPECT_EQ(cuda::root_placement_description(b + matmul(x, W), x = xh, W = Wh, b = bh),
            "cuBLASLt GEMM + bias epilogue (FP32): add(b, matmul(x, W)) -> f32[2,4]");
  EXPECT_EQ(cuda::root_placement_description(relu(matmul(x, W)), x = xh, W = Wh),
            "cuBLASLt GEMM + relu epilogue (FP32): relu(matmul(x, W)) -> f32[2,4]");
  EXPECT_EQ(cuda::root_placement_description(relu(matmul(xd, Wd)), xd = xdh, Wd = Wdh),
            "cuBLASLt GEMM + relu epilogue (FP64): relu(matmul(xd, Wd)) -> f64[2,4]");
  cuda::options tf32;
  tf32.allow_tf32 = true;
  EXPECT_EQ(cuda::root_placement_description(matmul(x, W) + b, x = xh, W = Wh, b = bh, tf32),
            "cuBLASLt GEMM + bias epilogue (TF32 tensor cores): add(matmul(x, W), b) -> f32[2,4]");
  // Off, a bias that broadcasts from one element, or the layer inside a larger group: GEMM + map.
  cuda::options off;
  off.gemm_epilogues = false;
  EXPECT_EQ(cuda::root_placement_description(dense, x = xh, W = Wh, b = bh, off),
            "dense1/relu(dense1/add([dense1/matmul], b))");
  EXPECT_EQ(cuda::root_placement_description(relu(matmul(x, W) + c), x = xh, W = Wh, c = ch),
            "relu(add([matmul], c))");
  EXPECT_EQ(cuda::root_placement_description(relu(matmul(x, W) + b) * 2.0f, x = xh, W = Wh, b = bh),
            "mul(relu(add([matmul], b)), 2)");
  // root_group_description keeps describing the fusion group.
  EXPECT_EQ(cuda::root_group_description(dense, x = xh, W = Wh, b = bh), "dense1/relu(dense1/add([dense1/matmul], b))");
}

#define SYMFLOW_CUDA_EPILOGUE_TEST(name) \
  TEST_F(Gpu, Epilogue_##name) { check_case<epilogue_cases::name>(__LINE__ * 7919u + 29u); }
SYMFLOW_CUDA_EPILOGUE_CASES(SYMFLOW_CUDA_EPILOGUE_TEST)

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
struct placement_log_off_afterwards {
  ~placement_log_off_afterwards() { cuda::set_placement_log(false); }
};

// The inputs of epilogue_cases::relu_bias on the device.
struct dense_inputs {
  using layer = epilogue_cases::relu_bias;
  case_inputs host = make_inputs<layer>(4242u);
  decltype(layer::leaves()) leaves = layer::leaves();
  decltype(upload(std::get<0>(leaves), host.at(0))) x = upload(std::get<0>(leaves), host.at(0));
  decltype(upload(std::get<1>(leaves), host.at(1))) W = upload(std::get<1>(leaves), host.at(1));
  decltype(upload(std::get<2>(leaves), host.at(2))) b = upload(std::get<2>(leaves), host.at(2));
};

TEST_F(Gpu, EpilogueIsLoggedAndProfiledAndCanBeSwitchedOff) {
  placement_log_off_afterwards restore;
  const dense_inputs in;
  const auto& [x, W, b] = in.leaves;
  const auto layer = relu(matmul(x, W) + b);
  const host_array reference = cpu_reference<epilogue_cases::relu_bias>(in.host);
  cuda::options off;
  off.gemm_epilogues = false;

  cuda::set_placement_log(true);
  cuda::reset_placement_log();
  cuda::reset_profile();
  testing::internal::CaptureStderr();
  host_array fused, unfused;
  {
    cuda::profiling_scope timed;
    fused = download(cuda::eval(layer, cuda::feed(x, in.x), cuda::feed(W, in.W), cuda::feed(b, in.b)));
    unfused = download(cuda::eval(layer, cuda::feed(x, in.x), cuda::feed(W, in.W), cuda::feed(b, in.b), off));
  }
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_of(log, "cuBLASLt GEMM + bias + relu epilogue (FP32), on " + cuda::device_description() +
                              ", device 0: relu(add(matmul(x, W), b)) -> f32[37,29]"),
            1u)
      << log;
  // Switched off: the GEMM, then one map over its product.
  EXPECT_EQ(count_of(log, "kernel op matmul(x, W) -> f32[37,29], cuBLAS GEMM (FP32)"), 1u) << log;
  EXPECT_EQ(count_of(log, "relu(add([matmul], b)) -> f32[37,29]"), 1u) << log;
  const cuda::kernel_profile p = cuda::profile();
  EXPECT_NE(p.find("cuBLASLt GEMM + bias + relu epilogue (FP32): relu(add(matmul(x, W), b)) -> f32[37,29]"), nullptr)
      << p.slowest(10);
  cuda::reset_profile();

  EXPECT_TRUE(compare(fused, reference, 1e-5).ok) << compare(fused, reference, 1e-5).message;
  EXPECT_TRUE(compare(unfused, reference, 1e-5).ok) << compare(unfused, reference, 1e-5).message;
}

// The layer and its gradients as outputs of one evaluation: the gradients need the plain product
// (relu's mask), so the layer reads it instead of running a second GEMM; alone, it uses the epilogue.
TEST_F(Gpu, EpilogueLayerNextToItsGradients) {
  const dense_inputs in;
  const auto& [x, W, b] = in.leaves;
  const auto h = relu(matmul(x, W) + b);
  const auto loss = mean(square(h));
  const auto dW = grad(loss, W);
  const auto db = grad(loss, b);
  cuda::reset_profile();
  cuda::profiling_scope timed;
  const auto [dh, ddW, ddb] = cuda::eval(h, dW, db, cuda::feed(x, in.x), cuda::feed(W, in.W), cuda::feed(b, in.b));
  const auto alone = cuda::eval(h, cuda::feed(x, in.x), cuda::feed(W, in.W), cuda::feed(b, in.b));
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  const cuda::kernel_profile p = cuda::profile();
  const auto* epilogue = p.find("cuBLASLt GEMM + bias + relu epilogue (FP32): relu(add(matmul(x, W), b)) -> f32[37,29]");
  ASSERT_NE(epilogue, nullptr) << p.slowest(20);
  EXPECT_EQ(epilogue->launches, 1u) << p.slowest(20);
  cuda::reset_profile();

  const comparison ch = compare(download(dh), cpu_reference<epilogue_cases::relu_bias>(in.host), 1e-5);
  const comparison ca = compare(download(alone), cpu_reference<epilogue_cases::relu_bias>(in.host), 1e-5);
  const comparison cw = compare(download(ddW), cpu_reference<epilogue_cases::dense_loss_grad_W>(in.host), 1e-5);
  const comparison cb = compare(download(ddb), cpu_reference<epilogue_cases::dense_loss_grad_b>(in.host), 1e-5);
  EXPECT_TRUE(ch.ok) << ch.message;
  EXPECT_TRUE(ca.ok) << ca.message;
  EXPECT_TRUE(cw.ok) << cw.message;
  EXPECT_TRUE(cb.ok) << cb.message;
}

// An output written over its own left operand: the GEMM writes while it reads, so scratch memory.
TEST_F(Gpu, EpilogueOutputOverItsOwnInput) {
  const dense_inputs in;
  const auto& [x, W, b] = in.leaves;
  auto x_sq = placeholder<"xs", float, shape<dyn, 29>>();
  const host_array reference = cpu_reference<epilogue_cases::relu_bias>(in.host);
  const auto first = cuda::eval(relu(matmul(x, W) + b), cuda::feed(x, in.x), cuda::feed(W, in.W), cuda::feed(b, in.b));
  // [37,29] x [29,29] + b written into the left operand's own memory.
  tensor<float, shape<29, 29>> identity(extents_t<2>{29, 29}, 0.0f);
  for (std::size_t k = 0; k < 29; ++k) identity.data()[k * 29 + k] = 1.0f;
  const auto square_W = cuda::to_device(identity);
  auto V = variable<"V", float, shape<29, 29>>();
  auto inout = first.clone();
  cuda::eval_into(inout.view(), matmul(x_sq, V) + b, cuda::feed(x_sq, inout), cuda::feed(V, square_W), cuda::feed(b, in.b));
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  // relu(xW + b) + b, row by row.
  host_array expected = reference;
  const float* bias = in.host.at(2).data<float>();
  for (std::size_t r = 0; r < 37; ++r)
    for (std::size_t c = 0; c < 29; ++c) expected.data<float>()[r * 29 + c] += bias[c];
  const comparison cmp = compare(download(inout), expected, 1e-5);
  EXPECT_TRUE(cmp.ok) << cmp.message;
}

}  // namespace
}  // namespace symflow_cuda_test
