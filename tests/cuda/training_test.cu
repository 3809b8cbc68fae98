// Gradients on the GPU: several outputs in one evaluation (W3's loss and both gradients in one pass)
// and outputs that overwrite their inputs. The MLP's training step: mlp_step_test.cu.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include <symflow/cuda.hpp>

#include "gpu_harness.cuh"
#include "training_model.hpp"

namespace symflow_cuda_test {
namespace {
using namespace symflow;
using namespace symflow_cuda_test::training;

template <class T, class S>
void poison(cuda::device_tensor<T, S>& t) {
  if (t.bytes()) SYMFLOW_CUDA_CHECK(cudaMemset(t.data(), 0xFF, t.bytes()));
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// W3's loss and both gradients as three outputs of one evaluation: one kernel computes dw and the
// partials of both sums (exp(z) once per element), a second finishes the sums.
TEST_F(Gpu, W3LossAndGradientsInOnePass) {
  const w3_model m;
  const auto [dw, db] = m.gradients();
  for (const std::size_t n : {std::size_t(100003), (std::size_t(1) << 20) + 3}) {
    std::mt19937 rng{unsigned(n)};
    std::normal_distribution<float> normal;
    tensor<float, shape<dyn>> x(extents_t<1>{n}, uninitialized), y(extents_t<1>{n}, uninitialized),
        w(extents_t<1>{n}, uninitialized);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = normal(rng);
      y[i] = normal(rng) > 0 ? 1.f : -1.f;
      w[i] = 0.1f * normal(rng);
    }
    const float b = 0.1f;
    const w3_result ref = w3_on_cpu(x, y, w, b);

    const auto dx = cuda::to_device(x), dy = cuda::to_device(y), dwv = cuda::to_device(w);
    const auto dbv = cuda::to_device(tensor<float, shape<>>(b));
    cuda::device_tensor<float, shape<>> L(extents_t<0>{}), gb(extents_t<0>{});
    cuda::device_tensor<float, shape<dyn>> gw(extents_t<1>{n});
    poison(L);
    poison(gw);
    poison(gb);
    cuda::set_placement_log(true);
    cuda::reset_placement_log();
    testing::internal::CaptureStderr();
    cuda::eval_into(std::tie(L, gw, gb), m.loss(), dw, db, cuda::feed(m.x, dx), cuda::feed(m.y, dy),
                    cuda::feed(m.w, dwv), cuda::feed(m.b, dbv));
    SYMFLOW_CUDA_CHECK(cudaDeviceSynchronize());
    const std::string log = testing::internal::GetCapturedStderr();
    cuda::set_placement_log(false);
    EXPECT_EQ(count_of(log, "symflow placement:"), 2u) << log;
    EXPECT_EQ(count_of(log, "one_pass_dense_kernel"), 1u) << log;
    EXPECT_NE(log.find("3 outputs over f32[" + std::to_string(n) + "]"), std::string::npos) << log;
    EXPECT_EQ(count_of(log, "one_pass_finish_kernel"), 1u) << log;

    EXPECT_LT(relative_error(L.to_host()[0], ref.loss), 1e-5) << "n = " << n;
    EXPECT_LT(relative_error(gw.to_host(), ref.dw), 1e-5) << "n = " << n;
    EXPECT_LT(relative_error(gb.to_host()[0], ref.db), 1e-4) << "n = " << n;

    // The same three outputs returned as a tuple agree bit for bit with eval_into's.
    const auto [L2, gw2, gb2] = cuda::eval(m.loss(), dw, db, cuda::feed(m.x, dx), cuda::feed(m.y, dy),
                                           cuda::feed(m.w, dwv), cuda::feed(m.b, dbv));
    EXPECT_EQ(L2.to_host()[0], L.to_host()[0]);
    EXPECT_EQ(gb2.to_host()[0], gb.to_host()[0]);
    EXPECT_EQ(relative_error(gw2.to_host(), gw.to_host()), 0.0);
  }
}

// Outputs written over inputs: in place at the same index (no copy), read transposed (through
// scratch memory), and one output overwriting what a later output reads.
TEST_F(Gpu, OutputsMayOverwriteTheirInputs) {
  auto a = placeholder<"a", float, shape<dyn, dyn>>();
  auto b = placeholder<"b", float, shape<dyn, dyn>>();
  tensor<float, shape<dyn, dyn>> ah(extents_t<2>{67, 67}, uninitialized), bh(extents_t<2>{67, 67}, uninitialized);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (std::size_t k = 0; k < ah.size(); ++k) {
    ah[k] = u(rng);
    bh[k] = u(rng);
  }
  auto da = cuda::to_device(ah), db = cuda::to_device(bh);

  cuda::eval_into(da.view(), a * 3.0f + 1.0f, cuda::feed(a, da));
  auto got = da.to_host();
  // (The kernel may fuse the multiply-add: equal up to one rounding of a value of magnitude <= 4.)
  for (std::size_t k = 0; k < ah.size(); ++k) ASSERT_NEAR(got[k], ah[k] * 3.0f + 1.0f, 1e-6f) << k;

  da.copy_from_host(ah);
  cuda::eval_into(da.view(), transpose(a) * 2.0f, cuda::feed(a, da));
  got = da.to_host();
  for (std::size_t r = 0; r < 67; ++r)
    for (std::size_t c = 0; c < 67; ++c) ASSERT_EQ(got(r, c), ah(c, r) * 2.0f) << r << "," << c;

  da.copy_from_host(ah);
  cuda::eval_into(std::tie(da, db), a * 2.0f, a + b, cuda::feed(a, da), cuda::feed(b, db));
  const auto a2 = da.to_host(), b2 = db.to_host();
  for (std::size_t k = 0; k < ah.size(); ++k) {
    ASSERT_EQ(a2[k], ah[k] * 2.0f) << k;
    ASSERT_EQ(b2[k], ah[k] + bh[k]) << k;
  }

  // A reduction written over a value it reads.
  tensor<float, shape<dyn>> vh(extents_t<1>{1000}, 0.5f);
  auto v = placeholder<"v", float, shape<dyn>>();
  auto dv = cuda::to_device(vh);
  const cuda::device_view<float, shape<>> first(dv.data(), extents_t<0>{});
  cuda::eval_into(first, sum(v), cuda::feed(v, dv));
  const auto vr = dv.to_host();
  EXPECT_EQ(vr[0], 500.0f);
  EXPECT_EQ(vr[1], 0.5f);
}

}  // namespace
}  // namespace symflow_cuda_test
