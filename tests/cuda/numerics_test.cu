// check_numerics and the per-kernel profile of the CUDA backend. Each case runs on random inputs on
// the GPU and on the CPU (numerics_reference.cpp): with finite inputs, check_numerics changes no
// output bit and throws nothing; with a NaN (log of a negative) or an infinity (log of 0) introduced
// at one element, the GPU throws the numerics_error the CPU throws, word for word (the GPU's
// localisation re-runs the graph node by node in the CPU interpreter). Host-only tests (the profile's
// switch and report) run without a GPU; the others skip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <symflow/cuda.hpp>
#include <symflow/ops/all.hpp>

#include "gpu_harness.cuh"
#include "numerics_cases.hpp"

namespace symflow_cuda_test {
namespace {
using namespace symflow;
using numerics::cpu_outcome;
using numerics::model;

template <class S>
tensor<float, S> random_tensor(const extents_t<S::rank>& e, unsigned seed, float lo = 0.5f, float hi = 2.0f) {
  tensor<float, S> t(e, uninitialized);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = u(rng);
  return t;
}

template <class T, class S>
std::vector<float> values_of(const cuda::device_tensor<T, S>& d) {
  const auto h = d.to_host();
  return std::vector<float>(h.data(), h.data() + h.size());
}

std::vector<unsigned char> bytes_of(const std::vector<float>& v) {
  std::vector<unsigned char> b(v.size() * sizeof(float));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, double tolerance = 1e-5) {
  ASSERT_EQ(gpu.size(), cpu.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    num += (double(gpu[i]) - cpu[i]) * (double(gpu[i]) - cpu[i]);
    den += double(cpu[i]) * cpu[i];
  }
  EXPECT_LE(std::sqrt(num / (den > 0 ? den : 1)), tolerance);
}

// What the GPU did with check_numerics on: `run` evaluates and returns the outputs.
template <class F>
cpu_outcome gpu_checked(F&& run) {
  cpu_outcome o;
  check_numerics_scope checked;
  try {
    o.outputs = run();
  } catch (const numerics_error& e) {
    o.threw = true;
    o.what = e.what();
    o.op = e.op();
    o.node = e.node();
    o.location = e.location();
  }
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  return o;
}

// The three comparisons every case makes: finite inputs (no error, same outputs with the check on
// and off, close to the CPU), and the poisoned inputs (the CPU's error, word for word).
template <class Run>
void compare(Run&& run, const cpu_outcome& cpu_finite, const cpu_outcome& cpu_poisoned, const std::string& op,
             const std::string& node) {
  ASSERT_FALSE(cpu_finite.threw) << cpu_finite.what;
  ASSERT_TRUE(cpu_poisoned.threw);
  EXPECT_EQ(cpu_poisoned.op, op);
  EXPECT_EQ(cpu_poisoned.node, node);

  std::vector<std::vector<float>> unchecked;
  {
    check_numerics_scope off(false);
    unchecked = run(false);
  }
  const cpu_outcome gpu_finite = gpu_checked([&] { return run(false); });
  ASSERT_FALSE(gpu_finite.threw) << gpu_finite.what;
  ASSERT_EQ(gpu_finite.outputs.size(), unchecked.size());
  // A run may compute one CPU output several ways (eval, then eval_into): its outputs repeat the
  // CPU's list, so output k is compared with the CPU's output k modulo its count.
  ASSERT_FALSE(cpu_finite.outputs.empty());
  ASSERT_EQ(unchecked.size() % cpu_finite.outputs.size(), 0u);
  for (std::size_t k = 0; k < unchecked.size(); ++k) {
    EXPECT_EQ(bytes_of(gpu_finite.outputs[k]), bytes_of(unchecked[k])) << "output " << k << " changed with the check on";
    expect_close(gpu_finite.outputs[k], cpu_finite.outputs[k % cpu_finite.outputs.size()]);
  }

  const cpu_outcome gpu_poisoned = gpu_checked([&] { return run(true); });
  ASSERT_TRUE(gpu_poisoned.threw) << "check_numerics did not see the non-finite output";
  EXPECT_EQ(gpu_poisoned.op, op);
  EXPECT_EQ(gpu_poisoned.node, node);
  EXPECT_EQ(gpu_poisoned.location, cpu_poisoned.location);
  EXPECT_EQ(gpu_poisoned.what, cpu_poisoned.what);

  // Off, the same poisoned evaluation throws nothing.
  check_numerics_scope off(false);
  EXPECT_NO_THROW(run(true));
}

TEST_F(Gpu, CheckNumericsElementwiseNamesTheLogLikeTheCpu) {
  const model m;
  const std::size_t n = 100003;  // a tail for the dense kernel's last thread
  const auto a = random_tensor<shape<dyn>>({n}, 1, -0.5f, 2.0f);
  const auto b = random_tensor<shape<dyn>>({n}, 2, -1.0f, 1.0f);
  auto a_finite = tensor<float, shape<dyn>>::copy_of(a.view());
  for (std::size_t i = 0; i < n; ++i) a_finite.data()[i] = std::fabs(a_finite.data()[i]) + 0.1f;
  const auto cpu_finite = numerics::cpu_elementwise(a_finite, b);
  const auto cpu_poisoned = numerics::cpu_elementwise(a, b);
  const auto da = cuda::to_device(a), da_finite = cuda::to_device(a_finite), db = cuda::to_device(b);
  compare(
      [&](bool poisoned) {
        const auto& x = poisoned ? da : da_finite;
        auto out = cuda::eval(m.elementwise(), cuda::feed(m.a, x), cuda::feed(m.b, db));
        std::vector<std::vector<float>> r{values_of(out)};
        // eval_into checks too, into reused memory.
        cuda::eval_into(out, m.elementwise(), cuda::feed(m.a, x), cuda::feed(m.b, db));
        r.push_back(values_of(out));
        return r;
      },
      cpu_finite, cpu_poisoned, "log", "num/log");
  EXPECT_NE(cpu_poisoned.what.find("NaN"), std::string::npos);
}

TEST_F(Gpu, CheckNumericsReductionOutputNamesTheLog) {
  const model m;
  const auto x = random_tensor<shape<dyn, 16>>({333, 16}, 3);
  const auto w = random_tensor<shape<16>>({16}, 4, -1.0f, 1.0f);
  auto x_zero = tensor<float, shape<dyn, 16>>::copy_of(x.view());
  x_zero.data()[200 * 16 + 5] = 0.0f;  // log(0) = -Inf
  const auto cpu_finite = numerics::cpu_rows(x, w);
  const auto cpu_poisoned = numerics::cpu_rows(x_zero, w);
  const auto dx = cuda::to_device(x), dx_zero = cuda::to_device(x_zero);
  const auto dw = cuda::to_device(w);
  compare(
      [&](bool poisoned) {
        return std::vector<std::vector<float>>{
            values_of(cuda::eval(m.rows(), cuda::feed(m.x, poisoned ? dx_zero : dx), cuda::feed(m.w, dw)))};
      },
      cpu_finite, cpu_poisoned, "log", "rows/log");
  EXPECT_NE(cpu_poisoned.what.find("1 -Inf"), std::string::npos) << cpu_poisoned.what;
}

TEST_F(Gpu, CheckNumericsMatmulOutputReadsVariablesFromTheDeviceStore) {
  const model m;
  const auto x = random_tensor<shape<dyn, 16>>({64, 16}, 5);
  const auto W = random_tensor<shape<16, 8>>({16, 8}, 6, -1.0f, 1.0f);
  auto x_negative = tensor<float, shape<dyn, 16>>::copy_of(x.view());
  x_negative.data()[7 * 16 + 3] = -1.0f;
  const auto cpu_finite = numerics::cpu_dense(x, W);
  const auto cpu_poisoned = numerics::cpu_dense(x_negative, W);
  cuda::device_params store;
  store.set("W", W);
  const auto dx = cuda::to_device(x), dx_negative = cuda::to_device(x_negative);
  compare(
      [&](bool poisoned) {
        return std::vector<std::vector<float>>{
            values_of(cuda::eval(m.dense(), cuda::feed(m.x, poisoned ? dx_negative : dx), store))};
      },
      cpu_finite, cpu_poisoned, "log", "dense/log");
}

TEST_F(Gpu, CheckNumericsOnePassGroupWithHostFeeds) {
  const model m;
  const auto x = random_tensor<shape<dyn, 16>>({1000, 16}, 7);
  const auto w = random_tensor<shape<16>>({16}, 8, -1.0f, 1.0f);
  auto x_negative = tensor<float, shape<dyn, 16>>::copy_of(x.view());
  x_negative.data()[999 * 16 + 15] = -2.0f;  // the very last element
  const auto cpu_finite = numerics::cpu_loss_and_scaled(x, w);
  const auto cpu_poisoned = numerics::cpu_loss_and_scaled(x_negative, w);
  compare(
      [&](bool poisoned) {
        cuda::device_tensor<float, shape<>> L;
        cuda::device_tensor<float, shape<dyn, 16>> s;
        // Host feeds, uploaded during the evaluation (the localiser reads the host copies).
        cuda::eval_into(std::tie(L, s), m.loss(), m.scaled(), m.x = (poisoned ? x_negative : x), m.w = w);
        return std::vector<std::vector<float>>{values_of(L), values_of(s)};
      },
      cpu_finite, cpu_poisoned, "log", "loss/log");
}

TEST_F(Gpu, CheckNumericsIgnoresNonFiniteInputsThatReachNoOutput) {
  // where(x > 0, log(x), 0): the log of a negative is computed and masked; as on the CPU, compiled
  // evaluation checks outputs only.
  auto x = placeholder<"x", float, shape<dyn>>();
  tensor<float, shape<dyn>> h(extents_t<1>{1000}, -1.0f);
  const auto d = cuda::to_device(h);
  check_numerics_scope checked;
  auto out = cuda::eval(where(x > 0.0f, log(x), 0.0f * x), cuda::feed(x, d));
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  for (float v : values_of(out)) EXPECT_EQ(v, 0.0f);
}

// Runs without a GPU: the nodes built by nvcc's translation unit carry the locations the C++
// compiler's do (the error messages compared above include them).
TEST(CudaNumerics, SourceLocationsAgreeBetweenCompilers) {
  const std::string gpu_side = numerics::log_location(model{});
  EXPECT_EQ(gpu_side, numerics::cpu_log_location());
  EXPECT_NE(gpu_side.find("numerics_cases.hpp:"), std::string::npos) << gpu_side;
}

// Runs without a GPU: the CPU reference itself localises the node when a variable is fed like a
// placeholder (the localiser moves such feeds into the parameter store the interpreter reads).
TEST(CudaNumerics, CpuReferenceLocalisesFedVariables) {
  const auto x = random_tensor<shape<dyn, 16>>({5, 16}, 11);
  const auto w = random_tensor<shape<16>>({16}, 12);
  auto x_zero = tensor<float, shape<dyn, 16>>::copy_of(x.view());
  x_zero.data()[3] = 0.0f;
  const cpu_outcome finite = numerics::cpu_rows(x, w), poisoned = numerics::cpu_rows(x_zero, w);
  EXPECT_FALSE(finite.threw) << finite.what;
  ASSERT_TRUE(poisoned.threw);
  EXPECT_EQ(poisoned.op, "log");
  EXPECT_EQ(poisoned.node, "rows/log");
  EXPECT_NE(poisoned.what.find("produced 0 NaN, 1 -Inf, 0 +Inf of 80 values of f32[5,16]"), std::string::npos)
      << poisoned.what;
}

// ---- the per-kernel profile ----------------------------------------------------------------------

TEST(CudaProfile, SwitchesOnAndOff) {
  {
    cuda::profiling_scope on;
    EXPECT_TRUE(cuda::profiling_enabled());
    cuda::set_profiling(false);
    EXPECT_FALSE(cuda::profiling_enabled());
  }
  cuda::set_profiling(false);
  EXPECT_FALSE(cuda::profiling_enabled());
}

TEST(CudaProfile, ListsTheSlowestGroups) {
  cuda::kernel_profile p;
  p.entries.push_back({"map_dense_kernel: relu(x) -> f32[4]", 2, 0.001});
  p.entries.push_back({"kernel op matmul(x, W) -> f32[4,4]", 1, 0.003});
  p.entries.push_back({"reduce_rows_kernel: sum{axes=[1]}(x) -> f32[4]", 4, 0.002});
  EXPECT_DOUBLE_EQ(p.total_seconds(), 0.006);
  const std::string top = p.slowest(2);
  EXPECT_EQ(top,
            "     3.000 ms  50.0%      1x     3.000 ms  kernel op matmul(x, W) -> f32[4,4]\n"
            "     2.000 ms  33.3%      4x     0.500 ms  reduce_rows_kernel: sum{axes=[1]}(x) -> f32[4]\n");
  ASSERT_NE(p.find("map_dense_kernel: relu(x) -> f32[4]"), nullptr);
  EXPECT_EQ(p.find("nothing"), nullptr);
}

TEST_F(Gpu, ProfileTimesEachFusionGroupOnce) {
  const model m;
  const auto x = random_tensor<shape<dyn, 16>>({4096, 16}, 9);
  const auto W = random_tensor<shape<16, 8>>({16, 8}, 10, -1.0f, 1.0f);
  cuda::device_params store;
  store.set("W", W);
  const auto dx = cuda::to_device(x);
  cuda::reset_profile();
  {
    cuda::profiling_scope on;
    for (int k = 0; k < 3; ++k) (void)cuda::eval(relu(m.dense()) * 2.0f, cuda::feed(m.x, dx), store);
  }
  const cuda::kernel_profile p = cuda::profile();
  std::size_t matmuls = 0, logs = 0, maps = 0;
  for (const auto& e : p.entries) {
    EXPECT_EQ(e.launches, 3u) << e.description;
    EXPECT_GT(e.seconds, 0.0) << e.description;
    if (e.description.rfind("kernel op dense/matmul(", 0) == 0) ++matmuls;
    if (e.description.find("dense/log(x)") != std::string::npos && e.description.rfind("map_", 0) == 0) ++logs;
    if (e.description.find("mul(relu([dense/matmul]), 2)") != std::string::npos) ++maps;
  }
  EXPECT_EQ(matmuls, 1u) << p.slowest(10);
  EXPECT_EQ(logs, 1u) << p.slowest(10);
  EXPECT_EQ(maps, 1u) << p.slowest(10);
  EXPECT_NE(p.slowest(1).find(" ms "), std::string::npos);
  cuda::reset_profile();
  EXPECT_TRUE(cuda::profile().entries.empty());
  // Off: nothing is recorded.
  (void)cuda::eval(relu(m.dense()), cuda::feed(m.x, dx), store);
  EXPECT_TRUE(cuda::profile().entries.empty());
}

}  // namespace
}  // namespace symflow_cuda_test
