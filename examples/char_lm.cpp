// A character-level language model on the text of Debian's fortunes package: characters embedded
// (32 wide), a GRU (128 units) run over 64-character windows by scan, and a dense layer to the next
// character's logits. Trained with Adam (cosine decay, gradients clipped to norm 1); reports bits per
// character on held-out text (the last 5% of the corpus) against what a unigram model gets there,
// then samples text.
//
//   char_lm [--steps N] [--eval-every N] [--sample N] [--limit-bytes N] [--seed N] [--data DIR]
//
// The last lines printed are validation_bpc=X.XXXX unigram_bpc=X.XXXX and the sample.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <symflow/data/text.hpp>
#include <symflow/nn/all.hpp>
#include <symflow/symflow.hpp>
#include <symflow/train/all.hpp>

using namespace symflow;

namespace {
constexpr std::size_t vocabulary = ascii_vocabulary::size, embedding_width = 32, hidden = 128, window = 64;
// The batch is part of the model's type: the states [window, batch, hidden] flatten to
// [window * batch, hidden] for the output layer, and the gradient of that reshape needs all but one
// extent known.
constexpr std::size_t batch = 32;

struct flags {
  std::size_t steps = 2000, eval_every = 250, sample = 400, limit_bytes = std::size_t(-1);
  std::uint64_t seed = 42;
  std::string data = std::string(fortunes_directory);
};

flags parse(int argc, char** argv) {
  flags f;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    const auto number = [&] {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(value, &end, 10);
      if (end == value || *end || value[0] == '-') throw value_error(std::string(flag) + " needs a non-negative integer");
      return std::size_t(v);
    };
    if (flag == "--steps") f.steps = number();
    else if (flag == "--eval-every") f.eval_every = number();
    else if (flag == "--sample") f.sample = number();
    else if (flag == "--limit-bytes") f.limit_bytes = number();
    else if (flag == "--seed") f.seed = number();
    else if (flag == "--data") f.data = value;
    else throw value_error("unknown flag " + std::string(flag));
  }
  if (argc % 2 == 0) throw value_error("every flag takes a value: " + std::string(argv[argc - 1]));
  if (f.eval_every == 0) throw value_error("--eval-every must be at least 1");
  return f;
}

// Windows of window + 1 characters starting at the given offsets, time-major: inputs [window, batch]
// and the next character of each, [window * batch] in the same (t, b) order as the flattened states.
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
}  // namespace

int main(int argc, char** argv) try {
  const flags f = parse(argc, argv);
  std::string corpus;
  try {
    corpus = read_fortunes(f.data, f.limit_bytes);
  } catch (const value_error& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 77;  // ctest's skip code: no corpus installed
  }
  const std::vector<std::int32_t> ids = ascii_vocabulary::encode(corpus);
  const std::size_t split = ids.size() - ids.size() / 20;
  const std::vector<std::int32_t> train(ids.begin(), ids.begin() + std::ptrdiff_t(split)), held_out(ids.begin() + std::ptrdiff_t(split), ids.end());
  if (train.size() < 2 * (window + 1) || held_out.size() < batch * window + 1)
    throw value_error("the corpus is too short: --limit-bytes must leave " + std::to_string(batch * window + 1) +
                      " held-out characters (5% of the text)");
  std::cerr << "char_lm: " << train.size() << " training and " << held_out.size() << " held-out characters\n";

  auto chars = placeholder<"chars", std::int32_t, shape<dyn, batch>>();  // [window, batch]
  auto next = placeholder<"next", std::int32_t, shape<dyn>>();         // [window * batch]
  auto h0 = placeholder<"h0", float, shape<batch, hidden>>();
  nn::embedding<"embed", vocabulary, embedding_width> embed;
  nn::gru_cell<"gru", embedding_width, hidden> cell;
  nn::dense<"logits", hidden, vocabulary> output;
  const auto states = scan(cell, h0, embed(chars));                            // [window, batch, hidden]
  const auto logits = output(reshape<shape<dyn, hidden>>(states));             // [window * batch, vocabulary]
  const auto loss = mean(softmax_cross_entropy(logits, next));                 // nats per character

  nn::trainer train_step(loss, nn::parameters(embed, cell, output),
                         adam({.learning_rate = cosine_decay(3e-3, std::max<std::size_t>(f.steps, 1))}),
                         {.seed = f.seed, .clip_global_norm = 1.0});
  const tensor<float, shape<batch, hidden>> zeros_state({batch, hidden}, 0.0f);

  // Bits per character over non-overlapping windows of the held-out text (at most 64 batches).
  const auto held_out_bpc = [&] {
    double nats = 0, count = 0;
    tensor<std::int32_t, shape<dyn, batch>> x;
    tensor<std::int32_t, shape<dyn>> y;
    std::vector<std::size_t> starts;
    for (std::size_t s = 0; s + window + 1 <= held_out.size() && count < 64.0 * batch * window; s += window) {
      starts.push_back(s);
      if (starts.size() < batch) continue;
      load_windows(held_out, starts, x, y);
      nats += double(eval(loss, chars = x, next = y, h0 = zeros_state, train_step.model())[0]) * double(y.size());
      count += double(y.size());
      starts.clear();
    }
    return nats / count / std::log(2.0);
  };

  std::mt19937_64 engine(f.seed);
  std::uniform_int_distribution<std::size_t> pick(0, train.size() - window - 2);
  std::vector<std::size_t> starts(batch);
  tensor<std::int32_t, shape<dyn, batch>> x;
  tensor<std::int32_t, shape<dyn>> y;
  for (std::size_t done = 0; done < f.steps;) {
    const std::size_t chunk = std::min(f.eval_every, f.steps - done);
    epoch_progress progress("steps " + std::to_string(done + 1) + "-" + std::to_string(done + chunk), chunk);
    running_mean bits;
    for (std::size_t i = 0; i < chunk; ++i, ++done) {
      for (auto& s : starts) s = pick(engine);
      load_windows(train, starts, x, y);
      bits.add(train_step.step(chars = x, next = y, h0 = zeros_state) / std::log(2.0));
      progress.update(i + 1, (i + 1) * batch * window, bits.mean(), 0);
    }
    progress.finish();
    std::printf("step %zu: training bpc %.4f, held-out bpc %.4f\n", done, bits.mean(), held_out_bpc());
    std::fflush(stdout);
  }
  std::printf("validation_bpc=%.4f unigram_bpc=%.4f\n", held_out_bpc(), unigram_bits_per_character(train, held_out));

  // Sampling, one character at a time: the same cell and layers on a batch of one.
  auto current = placeholder<"current", std::int32_t, shape<dyn>>();
  auto state = placeholder<"state", float, shape<dyn, hidden>>();
  const auto next_state = cell(embed(current), state);
  const auto probabilities = softmax(output(next_state) * 1.25f);  // temperature 0.8
  tensor<float, shape<dyn, hidden>> h({1, hidden}, 0.0f);
  tensor<std::int32_t, shape<dyn>> c({1}, ascii_vocabulary::newline);
  std::string sample;
  for (std::size_t i = 0; i < f.sample; ++i) {
    auto [p, h_next] = eval(probabilities, next_state, current = c, state = h, train_step.model());
    std::discrete_distribution<int> choose(p.data(), p.data() + vocabulary);
    c(0) = choose(engine);
    h = h_next;
    sample += ascii_vocabulary::character(c(0));
  }
  std::printf("sample:\n%s\n", sample.c_str());
} catch (const error& e) {
  std::cerr << argv[0] << ": " << e.what() << "\n";
  return 1;
}
