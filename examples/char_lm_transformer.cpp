// char_lm's transformer: characters embedded (128 wide) plus a learned embedding of each position,
// two pre-norm causal transformer blocks (4-head self-attention and a GELU MLP 4x as wide, each
// added to its input), a final layer norm and a dense layer to the next character's logits.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <symflow/data/text.hpp>
#include <symflow/graph/all.hpp>
#include <symflow/nn/all.hpp>
#include <symflow/runtime/interpreter.hpp>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>

#include "char_lm.hpp"

using namespace symflow;
using char_lm::window;

namespace {
constexpr std::size_t vocabulary = ascii_vocabulary::size, width = 128, heads = 4;

// x + attention(norm(x)), then h + mlp(norm(h)); its layers are named "<block>/<part>".
template <fixed_string Name>
struct block {
  nn::layer_norm<scoped_name<Name, "norm1">, width> norm1;
  nn::multi_head_attention<scoped_name<Name, "attention">, width, heads> attention;
  nn::layer_norm<scoped_name<Name, "norm2">, width> norm2;
  nn::dense<scoped_name<Name, "up">, width, 4 * width> up;
  nn::dense<scoped_name<Name, "down">, 4 * width, width> down;
  auto layers() const { return std::tie(norm1, attention, norm2, up, down); }
  template <expression X>
  auto operator()(const X& x) const {
    const auto h = x + attention(norm1(x), causal);
    return h + down(gelu(up(norm2(h))));
  }
};

struct transformer {
  // Token and position embeddings start small, N(0, 0.02), as GPT-2's.
  nn::embedding<"embed", vocabulary, width> embed{{.table = normal_init{0, 0.02}}};
  nn::parameter<"position", "table", float, shape<window, width>> position{normal_init{0, 0.02}, source_site::current()};
  block<"block1"> block1;
  block<"block2"> block2;
  nn::layer_norm<"final_norm", width> norm;
  nn::dense<"logits", width, vocabulary> output;
  auto layers() const { return std::tie(embed, position, block1, block2, norm, output); }
  // ids [n, window] -> logits [n, window, vocabulary]
  template <expression Ids>
  auto operator()(const Ids& ids) const {
    return output(norm(block2(block1(embed(ids) + position.var))));
  }
};

// Windows starting at the given offsets, batch-major: inputs [n, window] and the next character of
// each position, [n * window] in the same (b, t) order as the flattened logits.
void load_windows(const std::vector<std::int32_t>& text, const std::vector<std::size_t>& starts,
                  tensor<std::int32_t, shape<dyn, window>>& inputs, tensor<std::int32_t, shape<dyn>>& targets) {
  const std::size_t n = starts.size();
  inputs = tensor<std::int32_t, shape<dyn, window>>({n, window}, uninitialized);
  targets = tensor<std::int32_t, shape<dyn>>({n * window}, uninitialized);
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t t = 0; t < window; ++t) {
      inputs(k, t) = text[starts[k] + t];
      targets(k * window + t) = text[starts[k] + t + 1];
    }
}
}  // namespace

char_lm::model_functions char_lm::transformer_model(const flags& f) {
  auto chars = placeholder<"chars", std::int32_t, shape<dyn, window>>();
  auto next = placeholder<"next", std::int32_t, shape<dyn>>();
  auto m = std::make_shared<transformer>();
  const auto logits = reshape<shape<dyn, vocabulary>>((*m)(chars));  // [n * window, vocabulary]
  const auto loss = mean(softmax_cross_entropy(logits, next));        // nats per character
  nn::trainer train_step(loss, nn::parameters(*m),
                         adam({.learning_rate = cosine_decay(1e-3, std::max<std::size_t>(f.steps, 1))}),
                         {.seed = f.seed, .clip_global_norm = 1.0});
  // The functions below outlive this call: they share the model and the training state.
  auto trainer = std::make_shared<decltype(train_step)>(std::move(train_step));

  model_functions out;
  out.step = [=](const std::vector<std::int32_t>& text, const std::vector<std::size_t>& starts) {
    tensor<std::int32_t, shape<dyn, window>> x;
    tensor<std::int32_t, shape<dyn>> y;
    load_windows(text, starts, x, y);
    return double(trainer->step(chars = x, next = y));
  };
  out.loss = [=](const std::vector<std::int32_t>& text, const std::vector<std::size_t>& starts) {
    tensor<std::int32_t, shape<dyn, window>> x;
    tensor<std::int32_t, shape<dyn>> y;
    load_windows(text, starts, x, y);
    return double(eval(loss, chars = x, next = y, trainer->model())[0]);
  };
  // The logits' graph, run by the interpreter for sampling and --export. This model's eval runs as
  // a runtime program, the graph's lowering, so these are the typed model's logits; a second typed
  // pass of the model for them would cost this file more compile time than the training step does.
  const auto logits_graph = std::make_shared<const graph>(to_graph(logits));
  out.export_to = [=](const std::vector<std::int32_t>& text) {
    const std::vector<std::size_t> starts{0, window, 2 * window, 3 * window};
    tensor<std::int32_t, shape<dyn, window>> x;
    tensor<std::int32_t, shape<dyn>> y;
    load_windows(text, starts, x, y);
    runtime_feeds feeds;
    feeds.emplace("chars", runtime_tensor(x));
    const runtime_tensor expected = interpreter(*logits_graph).run(feeds, &trainer->model()).at(0);
    return model_functions::exported{*logits_graph, trainer->model(), {{"chars", feeds.at("chars").to_graph_tensor()}},
                                     expected.to_graph_tensor()};
  };
  // The last window characters (newlines at first) as the context; the next character is drawn from
  // the prediction at its last position, softmax(logits / 0.8).
  out.sample = [=](std::size_t count, std::uint64_t seed) {
    const interpreter predict(*logits_graph);
    runtime_feeds feeds;
    feeds.emplace("chars", runtime_tensor(dtype::i32, {1, window}));
    std::int32_t* context = feeds.at("chars").data<std::int32_t>();
    std::fill(context, context + window, ascii_vocabulary::newline);
    std::mt19937_64 engine(seed);
    std::string text;
    std::vector<double> p(vocabulary);
    for (std::size_t i = 0; i < count; ++i) {
      const runtime_tensor l = predict.run(feeds, &trainer->model()).at(0);
      const float* last = l.data<float>() + (window - 1) * vocabulary;
      const float top = *std::max_element(last, last + vocabulary);
      for (std::size_t k = 0; k < vocabulary; ++k) p[k] = std::exp(1.25 * (double(last[k]) - top));
      std::discrete_distribution<int> choose(p.begin(), p.end());
      const int c = choose(engine);
      std::copy(context + 1, context + window, context);
      context[window - 1] = c;
      text += ascii_vocabulary::character(c);
    }
    return text;
  };
  return out;
}
