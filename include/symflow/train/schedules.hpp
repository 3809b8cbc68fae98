#pragma once
// Learning-rate schedules: the rate as a function of the optimiser's step count (the number of
// updates already made). The step count lives in the optimiser's state store, so a run resumed from
// a checkpoint continues the schedule exactly where it stopped.
#include <cmath>
#include <cstdint>
#include <functional>
#include <numbers>
#include <string>
#include <utility>

#include "../core/error.hpp"

namespace symflow {

class learning_rate_schedule {
 public:
  // A plain number is a constant rate: adam({.learning_rate = 1e-3}).
  learning_rate_schedule(double constant_rate) : learning_rate_schedule(checked("constant", constant_rate), 0) {}
  explicit learning_rate_schedule(std::function<double(std::uint64_t)> rate) : rate_(std::move(rate)) {
    if (!rate_) throw value_error("learning_rate_schedule: no function given");
  }

  double operator()(std::uint64_t step) const { return rate_(step); }

 private:
  learning_rate_schedule(double rate, int) : rate_([rate](std::uint64_t) { return rate; }) {}
  static double checked(const char* what, double rate) {
    if (!(rate >= 0) || !std::isfinite(rate))
      throw value_error(std::string("learning rate schedule (") + what + "): the rate must be finite and >= 0, got " +
                        std::to_string(rate));
    return rate;
  }
  friend learning_rate_schedule constant_rate(double);
  friend learning_rate_schedule step_decay(double, double, std::uint64_t);
  friend learning_rate_schedule cosine_decay(double, std::uint64_t, double, std::uint64_t);

  std::function<double(std::uint64_t)> rate_;
};

inline learning_rate_schedule constant_rate(double rate) { return learning_rate_schedule(rate); }

// initial * factor^floor(step / every_steps): e.g. halve the rate every 1000 steps.
inline learning_rate_schedule step_decay(double initial, double factor, std::uint64_t every_steps) {
  learning_rate_schedule::checked("step_decay", initial);
  if (!(factor > 0) || !std::isfinite(factor))
    throw value_error("step_decay: the factor must be finite and > 0, got " + std::to_string(factor));
  if (every_steps == 0) throw value_error("step_decay: every_steps must be at least 1");
  return learning_rate_schedule([=](std::uint64_t step) { return initial * std::pow(factor, double(step / every_steps)); });
}

// Linear warm-up from 0 over warmup_steps, then half a cosine from initial down to final_rate at
// total_steps; final_rate afterwards. Warm-up keeps Adam's first, poorly estimated moments from
// taking full-size steps.
inline learning_rate_schedule cosine_decay(double initial, std::uint64_t total_steps, double final_rate = 0,
                                           std::uint64_t warmup_steps = 0) {
  learning_rate_schedule::checked("cosine_decay", initial);
  learning_rate_schedule::checked("cosine_decay", final_rate);
  if (total_steps == 0 || warmup_steps >= total_steps)
    throw value_error("cosine_decay: total_steps (" + std::to_string(total_steps) +
                      ") must be at least 1 and exceed warmup_steps (" + std::to_string(warmup_steps) + ")");
  return learning_rate_schedule([=](std::uint64_t step) {
    if (step < warmup_steps) return initial * double(step + 1) / double(warmup_steps);
    if (step >= total_steps) return final_rate;
    const double progress = double(step - warmup_steps) / double(total_steps - warmup_steps);
    return final_rate + 0.5 * (initial - final_rate) * (1 + std::cos(std::numbers::pi * progress));
  });
}

}  // namespace symflow
