// char_lm's GRU: characters embedded (32 wide), a GRU (128 units) run over each window by scan, and
// a dense layer to the next character's logits.
#include <random>
#include <string>
#include <vector>

#include <symflow/data/text.hpp>
#include <symflow/nn/all.hpp>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>

#include "char_lm.hpp"

using namespace symflow;
using char_lm::batch;
using char_lm::window;

namespace {
constexpr std::size_t vocabulary = ascii_vocabulary::size, embedding_width = 32, hidden = 128;

// Windows starting at the given offsets, time-major: inputs [window, batch] and the next character
// of each, [window * batch] in the same (t, b) order as the flattened states.
void load_windows(const std::vector<std::int32_t>& text, const std::vector<std::size_t>& starts,
                  tensor<std::int32_t, shape<dyn, batch>>& inputs, tensor<std::int32_t, shape<dyn>>& targets) {
  const std::size_t b = starts.size();
  inputs = tensor<std::int32_t, shape<dyn, batch>>({window, b}, uninitialized);
  targets = tensor<std::int32_t, shape<dyn>>({window * b}, uninitialized);
  for (std::size_t t = 0; t < window; ++t)
    for (std::size_t k = 0; k < b; ++k) {
      inputs(t, k) = text[starts[k] + t];
      targets(t * b + k) = text[starts[k] + t + 1];
    }
}

struct gru_language_model {
  nn::embedding<"embed", vocabulary, embedding_width> embed;
  nn::gru_cell<"gru", embedding_width, hidden> cell;
  nn::dense<"logits", hidden, vocabulary> output;
  auto layers() const { return std::tie(embed, cell, output); }
};
}  // namespace

char_lm::model_functions char_lm::gru_model(const flags& f) {
  // The batch is part of the model's type: the states [window, batch, hidden] flatten to
  // [window * batch, hidden] for the output layer, and the gradient of that reshape needs all but
  // one extent known.
  auto chars = placeholder<"chars", std::int32_t, shape<dyn, batch>>();  // [window, batch]
  auto next = placeholder<"next", std::int32_t, shape<dyn>>();         // [window * batch]
  auto h0 = placeholder<"h0", float, shape<batch, hidden>>();
  auto m = std::make_shared<gru_language_model>();
  const auto states = scan(m->cell, h0, m->embed(chars));                     // [window, batch, hidden]
  const auto logits = m->output(reshape<shape<dyn, hidden>>(states));         // [window * batch, vocabulary]
  const auto loss = mean(softmax_cross_entropy(logits, next));                // nats per character
  nn::trainer train_step(loss, nn::parameters(*m),
                         adam({.learning_rate = cosine_decay(3e-3, std::max<std::size_t>(f.steps, 1))}),
                         {.seed = f.seed, .clip_global_norm = 1.0});
  // The functions below outlive this call: they share the model and the training state.
  auto trainer = std::make_shared<decltype(train_step)>(std::move(train_step));
  const auto zeros_state = std::make_shared<tensor<float, shape<batch, hidden>>>(std::array<std::size_t, 2>{batch, hidden}, 0.0f);

  model_functions out;
  out.step = [=](const std::vector<std::int32_t>& text, const std::vector<std::size_t>& starts) {
    tensor<std::int32_t, shape<dyn, batch>> x;
    tensor<std::int32_t, shape<dyn>> y;
    load_windows(text, starts, x, y);
    return double(trainer->step(chars = x, next = y, h0 = *zeros_state));
  };
  out.loss = [=](const std::vector<std::int32_t>& text, const std::vector<std::size_t>& starts) {
    tensor<std::int32_t, shape<dyn, batch>> x;
    tensor<std::int32_t, shape<dyn>> y;
    load_windows(text, starts, x, y);
    return double(eval(loss, chars = x, next = y, h0 = *zeros_state, trainer->model())[0]);
  };
  out.export_to = [=](const std::vector<std::int32_t>& text) {
    std::vector<std::size_t> starts(batch);
    for (std::size_t k = 0; k < batch; ++k) starts[k] = k * window;
    tensor<std::int32_t, shape<dyn, batch>> x;
    tensor<std::int32_t, shape<dyn>> y;
    load_windows(text, starts, x, y);
    const auto expected = eval(logits, chars = x, h0 = *zeros_state, trainer->model());
    return model_functions::exported{to_graph(logits), trainer->model(),
                                     {{"chars", runtime_tensor(x).to_graph_tensor()}, {"h0", runtime_tensor(*zeros_state).to_graph_tensor()}},
                                     runtime_tensor(expected).to_graph_tensor()};
  };
  // One character at a time: the same cell and layers on a batch of one, carrying the state.
  out.sample = [=](std::size_t count, std::uint64_t seed) {
    auto current = placeholder<"current", std::int32_t, shape<dyn>>();
    auto state = placeholder<"state", float, shape<dyn, hidden>>();
    const auto next_state = m->cell(m->embed(current), state);
    const auto probabilities = softmax(m->output(next_state) * 1.25f);  // temperature 0.8
    tensor<float, shape<dyn, hidden>> h({1, hidden}, 0.0f);
    tensor<std::int32_t, shape<dyn>> c({1}, ascii_vocabulary::newline);
    std::mt19937_64 engine(seed);
    std::string text;
    for (std::size_t i = 0; i < count; ++i) {
      auto [p, h_next] = eval(probabilities, next_state, current = c, state = h, trainer->model());
      std::discrete_distribution<int> choose(p.data(), p.data() + vocabulary);
      c(0) = choose(engine);
      h = h_next;
      text += ascii_vocabulary::character(c(0));
    }
    return text;
  };
  return out;
}
