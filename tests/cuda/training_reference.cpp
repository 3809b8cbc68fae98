// CPU references for the training tests: symflow::eval on the CPU backend, compiled by the C++
// compiler, for the same expressions the GPU tests evaluate (training_model.hpp).
#include <random>

#include <symflow/eval/cpu/eval.hpp>

#include "training_model.hpp"

namespace symflow_cuda_test::training {

mlp_params random_mlp_params(unsigned seed) {
  std::mt19937 rng(seed);
  auto fill = [&](auto& t, float scale) {
    std::uniform_real_distribution<float> u(-scale, scale);
    for (std::size_t k = 0; k < t.size(); ++k) t[k] = u(rng);
  };
  mlp_params p;
  fill(p.W1, 1.0f / 28.0f);  // 1/sqrt(784)
  fill(p.b1, 0.01f);
  fill(p.W2, 1.0f / 32.0f);  // 1/sqrt(1024)
  fill(p.b2, 0.01f);
  return p;
}

mlp_batch random_mlp_batch(std::size_t batch, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, 9);
  mlp_batch b{tensor<float, shape<dyn, 784>>(extents_t<2>{batch, 784}, uninitialized),
              tensor<std::int32_t, shape<dyn>>(extents_t<1>{batch}, uninitialized)};
  for (std::size_t k = 0; k < b.x.size(); ++k) b.x[k] = pixel(rng);
  for (std::size_t k = 0; k < b.y.size(); ++k) b.y[k] = label(rng);
  return b;
}

mlp_gradients mlp_gradients_on_cpu(const mlp_params& p, const mlp_batch& b) {
  const mlp_model m;
  const auto [dW1, db1, dW2, db2] = m.gradients();
  params store;
  store.set("W1", p.W1);
  store.set("b1", p.b1);
  store.set("W2", p.W2);
  store.set("b2", p.b2);
  auto [L, g1, gb1, g2, gb2] = eval(m.loss(), dW1, db1, dW2, db2, m.x = b.x, m.y = b.y, store);
  return {L[0], std::move(g1), std::move(gb1), std::move(g2), std::move(gb2)};
}

w3_result w3_on_cpu(const tensor<float, shape<dyn>>& x, const tensor<float, shape<dyn>>& y,
                    const tensor<float, shape<dyn>>& w, float b) {
  const w3_model m;
  const auto [dw, db] = m.gradients();
  const tensor<float, shape<>> bt(b);
  auto [L, gw, gb] = eval(m.loss(), dw, db, m.x = x, m.y = y, m.w = w, m.b = bt);
  return {L[0], std::move(gw), gb[0]};
}

}  // namespace symflow_cuda_test::training
