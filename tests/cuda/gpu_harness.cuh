#pragma once
// GPU side of the suite: uploads a case's inputs, evaluates it with cuda::eval, and checks the result
// against the CPU reference. Every test skips (with the reason) when no CUDA device is present.
#include <gtest/gtest.h>

#include <symflow/cuda.hpp>

#include "harness.hpp"

namespace symflow_cuda_test {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!symflow::cuda::device_available())
      GTEST_SKIP() << "symflow::cuda: GPU test skipped, " << symflow::cuda::device_description();
  }
};

template <class Case>
constexpr double tolerance() {
  if constexpr (requires { Case::tolerance; }) return Case::tolerance;
  else return 1e-5;
}

template <class T, class S>
host_array download(const symflow::cuda::device_tensor<T, S>& d) {
  return host_array::of(d.to_host());
}

template <class Case>
constexpr bool wants_tf32() {
  if constexpr (requires { Case::allow_tf32; }) return Case::allow_tf32;
  else return false;
}

template <class Leaf>
auto upload(const Leaf&, const host_array& in) {
  using T = typename Leaf::value_type;
  symflow::tensor<T, symflow::dyn_shape<Leaf::rank>> h(in.extents_as<T, Leaf::rank>(), symflow::uninitialized);
  if (h.size()) std::memcpy(h.data(), in.data<T>(), h.size() * sizeof(T));
  return symflow::cuda::to_device(h);
}

// Evaluates the case on the GPU twice: into a fresh tensor, and into a tensor whose bytes were first
// set to 0xFF (NaN for floats) to catch unwritten elements; both results must agree bit for bit.
// (Index sequences rather than nested generic lambdas: nvcc mis-expands a pack captured by a lambda
// inside another lambda.)
template <class Case, class Leaves, class Inputs, std::size_t... I>
host_array gpu_result_impl(const Leaves& leaves, const Inputs& device_inputs, std::index_sequence<I...>) {
  namespace cuda = symflow::cuda;
  const auto expr = Case::build(std::get<I>(leaves)...);
  cuda::options opt;
  opt.allow_tf32 = wants_tf32<Case>();
  auto fresh = cuda::eval(expr, cuda::feed(std::get<I>(leaves), std::get<I>(device_inputs))..., opt);
  decltype(fresh) poisoned(fresh.extents());
  if (poisoned.bytes()) SYMFLOW_CUDA_CHECK(cudaMemset(poisoned.data(), 0xFF, poisoned.bytes()));
  const void* before = poisoned.data();
  cuda::eval_into(poisoned, expr, cuda::feed(std::get<I>(leaves), std::get<I>(device_inputs))..., opt);
  EXPECT_EQ(before, static_cast<const void*>(poisoned.data())) << "eval_into did not reuse its output";
  SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  const host_array a = download(fresh), b = download(poisoned);
  EXPECT_EQ(a.bytes, b.bytes) << "results differ between evaluations (unwritten elements or a race)";
  return a;
}

template <class Case, class Leaves, std::size_t... I>
host_array gpu_result_of(const Leaves& leaves, const case_inputs& inputs, std::index_sequence<I...> seq) {
  const auto device_inputs = std::tuple{upload(std::get<I>(leaves), inputs.at(I))...};
  return gpu_result_impl<Case>(leaves, device_inputs, seq);
}

template <class Case>
host_array gpu_result(const case_inputs& inputs) {
  const auto leaves = Case::leaves();
  return gpu_result_of<Case>(leaves, inputs, std::make_index_sequence<std::tuple_size_v<decltype(leaves)>>{});
}

template <class Case>
void check_case(unsigned seed) {
  const case_inputs inputs = make_inputs<Case>(seed);
  const host_array reference = cpu_reference<Case>(inputs);
  const host_array result = gpu_result<Case>(inputs);
  const comparison c = compare(result, reference, tolerance<Case>());
  EXPECT_TRUE(c.ok) << c.message;
  if (c.ok && !c.message.empty()) ::testing::Test::RecordProperty("error", c.message);
}

}  // namespace symflow_cuda_test

#define SYMFLOW_CUDA_CASE_TEST(name) \
  TEST_F(Gpu, name) { check_case<cases::name>(__LINE__ * 7919u + 17u); }
