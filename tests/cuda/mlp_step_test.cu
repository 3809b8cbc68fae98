// An MLP's training step on the GPU: its gradients and SGD step against the CPU backend (TF32 off
// and on), and the step captured as a CUDA graph and replayed. A translation unit of its own (with
// training_test.cu, nvcc needed 65 s).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include <symflow/cuda.hpp>

#include "gpu_harness.cuh"
#include "training_model.hpp"

namespace symflow_cuda_test {
namespace {
using namespace symflow;
using namespace symflow_cuda_test::training;

// The device-side state of an MLP training run: parameters in a device store, one batch in device
// buffers, and the step: W <- W - lr * dW for all four parameters, in place, in one evaluation.
struct mlp_on_device {
  mlp_model m;
  cuda::stream s;
  cuda::device_params store;
  cuda::device_tensor<float, shape<dyn, 784>> x;
  cuda::device_tensor<std::int32_t, shape<dyn>> y;
  float lr;
  bool tf32;

  mlp_on_device(const mlp_params& p, const mlp_batch& b, float learning_rate, bool allow_tf32)
      : lr(learning_rate), tf32(allow_tf32) {
    set_params(p, true);
    x = cuda::to_device(b.x, s);
    y = cuda::to_device(b.y, s);
  }
  // Writes `p` into the store: new entries the first time, the same device memory afterwards (a
  // captured graph holds these addresses).
  void set_params(const mlp_params& p, bool first = false) {
    if (first) {
      store.set("W1", p.W1, s);
      store.set("b1", p.b1, s);
      store.set("W2", p.W2, s);
      store.set("b2", p.b2, s);
      return;
    }
    auto copy = [&](const char* name, const auto& t) {
      const cuda::device_params::entry& e = store.at(name);
      SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(e.bytes.data(), t.data(), t.size() * sizeof(float), cudaMemcpyHostToDevice, s.get()));
    };
    copy("W1", p.W1);
    copy("b1", p.b1);
    copy("W2", p.W2);
    copy("b2", p.b2);
    s.synchronize();
  }
  mlp_params params() const {
    mlp_params p;
    auto copy = [&](const char* name, auto& t) {
      SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(t.data(), store.at(name).bytes.data(), t.size() * sizeof(float),
                                         cudaMemcpyDeviceToHost, s.get()));
    };
    copy("W1", p.W1);
    copy("b1", p.b1);
    copy("W2", p.W2);
    copy("b2", p.b2);
    s.synchronize();
    return p;
  }
  void step() {
    const auto [dW1, db1, dW2, db2] = m.gradients();
    cuda::eval_into(std::tuple{store.view<float, shape<784, 1024>>("W1"), store.view<float, shape<1024>>("b1"),
                               store.view<float, shape<1024, 10>>("W2"), store.view<float, shape<10>>("b2")},
                    m.W1 - lr * dW1, m.b1 - lr * db1, m.W2 - lr * dW2, m.b2 - lr * db2, cuda::feed(m.x, x),
                    cuda::feed(m.y, y), store, cuda::options{s, tf32});
  }
};

mlp_params sgd_on_host(const mlp_params& p, const mlp_gradients& g, float lr) {
  mlp_params out = p;
  auto update = [&](auto& w, const auto& dw) {
    for (std::size_t k = 0; k < w.size(); ++k) w[k] = w[k] - lr * dw[k];
  };
  update(out.W1, g.W1);
  update(out.b1, g.b1);
  update(out.W2, g.W2);
  update(out.b2, g.b2);
  return out;
}

// The gradients of the MLP (five outputs of one evaluation: loss, dW1, db1, dW2, db2) and one SGD
// step in place, against the CPU backend. TF32 off: within 1e-5 (gradients) and 1e-5 (parameters)
// relative. TF32 on (10-bit mantissa products): 3e-2 for the gradients, because the symbolic
// gradient of log_softmax reaches dW1 and db1 as four matmul terms that largely cancel (the paths
// through the max subtracted for stability), so each term's TF32 rounding shows in their small sum
// (measured 1.4e-2 on an H100; dW2 and db2 stay under 5e-3); 5e-3 for the parameters.
TEST_F(Gpu, MlpGradientsAndSgdStepMatchTheCpu) {
  for (const bool tf32 : {false, true}) {
    const unsigned seed = tf32 ? 11u : 7u;
    const mlp_params p = random_mlp_params(seed);
    const mlp_batch batch = random_mlp_batch(96, seed + 1);
    const mlp_gradients ref = mlp_gradients_on_cpu(p, batch);
    const float lr = 0.5f;
    mlp_on_device d(p, batch, lr, tf32);

    const auto [dW1, db1, dW2, db2] = d.m.gradients();
    const auto [L, g1, gb1, g2, gb2] = cuda::eval(d.m.loss(), dW1, db1, dW2, db2, cuda::feed(d.m.x, d.x),
                                                  cuda::feed(d.m.y, d.y), d.store, cuda::options{d.s, tf32});
    const double gradient_tolerance = tf32 ? 3e-2 : 1e-5;
    EXPECT_LT(relative_error(L.to_host(d.s)[0], ref.loss), tf32 ? 1e-3 : 1e-5) << "tf32 " << tf32;
    EXPECT_LT(relative_error(g1.to_host(d.s), ref.W1), gradient_tolerance) << "dW1, tf32 " << tf32;
    EXPECT_LT(relative_error(gb1.to_host(d.s), ref.b1), gradient_tolerance) << "db1, tf32 " << tf32;
    EXPECT_LT(relative_error(g2.to_host(d.s), ref.W2), gradient_tolerance) << "dW2, tf32 " << tf32;
    EXPECT_LT(relative_error(gb2.to_host(d.s), ref.b2), gradient_tolerance) << "db2, tf32 " << tf32;

    d.step();
    const mlp_params got = d.params();
    const mlp_params want = sgd_on_host(p, ref, lr);
    const double parameter_tolerance = tf32 ? 5e-3 : 1e-5;
    EXPECT_LT(relative_error(got.W1, want.W1), parameter_tolerance) << "W1, tf32 " << tf32;
    EXPECT_LT(relative_error(got.b1, want.b1), parameter_tolerance) << "b1, tf32 " << tf32;
    EXPECT_LT(relative_error(got.W2, want.W2), parameter_tolerance) << "W2, tf32 " << tf32;
    EXPECT_LT(relative_error(got.b2, want.b2), parameter_tolerance) << "b2, tf32 " << tf32;
    // The step moved every parameter by about lr * dW (so it did update in place).
    EXPECT_GT(relative_error(got.W1, p.W1), 1e-4);
  }
}

// The whole step (forward, gradients, in-place update) captured once as a CUDA graph: replays give
// the same parameters, bit for bit, as the uncaptured step, and read new batches written into the
// same buffers.
TEST_F(Gpu, MlpStepCapturedAsGraphMatchesTheUncapturedStep) {
  const mlp_params p0 = random_mlp_params(21);
  const mlp_batch b0 = random_mlp_batch(128, 22), b1 = random_mlp_batch(128, 23);
  mlp_on_device d(p0, b0, 0.1f, false);
  constexpr int steps = 3;

  for (int k = 0; k < steps; ++k) d.step();
  const mlp_params uncaptured = d.params();
  d.x.copy_from_host(b1.x, d.s);
  d.y.copy_from_host(b1.y, d.s);
  d.step();
  const mlp_params uncaptured_next = d.params();

  d.set_params(p0);
  d.x.copy_from_host(b0.x, d.s);
  d.y.copy_from_host(b0.y, d.s);
  d.s.synchronize();
  const cuda::graph g = cuda::graph::capture(d.s, [&] { d.step(); });
  EXPECT_GT(g.node_count(), 20u);
  for (int k = 0; k < steps; ++k) g.launch(d.s);
  const mlp_params replayed = d.params();
  EXPECT_EQ(relative_error(replayed.W1, uncaptured.W1), 0.0);
  EXPECT_EQ(relative_error(replayed.b1, uncaptured.b1), 0.0);
  EXPECT_EQ(relative_error(replayed.W2, uncaptured.W2), 0.0);
  EXPECT_EQ(relative_error(replayed.b2, uncaptured.b2), 0.0);

  d.x.copy_from_host(b1.x, d.s);
  d.y.copy_from_host(b1.y, d.s);
  g.launch(d.s);
  const mlp_params replayed_next = d.params();
  EXPECT_EQ(relative_error(replayed_next.W1, uncaptured_next.W1), 0.0);
  EXPECT_EQ(relative_error(replayed_next.b2, uncaptured_next.b2), 0.0);
  EXPECT_GT(relative_error(replayed_next.W1, replayed.W1), 0.0);
}

}  // namespace
}  // namespace symflow_cuda_test
