#pragma once
// Seeded initial values for parameters: Glorot (Xavier) and He (Kaiming), uniform or normal, plus
// plain uniform, normal, zeros and constant fills.
//
// The same seed gives the same values with every standard library: std::uniform_real_distribution
// and std::normal_distribution are implementation-defined, only std::mt19937_64's output is fixed by
// the standard, so the transforms are written out here:
//   - uniform in [0, 1): the top 53 bits of one engine word, times 2^-53 (every double of the form
//     k * 2^-53 equally likely);
//   - standard normal: Box-Muller on two such draws, u1 taken in (0, 1] so that log(u1) is finite;
//     each pair of draws gives two values, sqrt(-2 log u1) * cos(2 pi u2) then * sin(2 pi u2).
// Values are computed in double and rounded once to the parameter's dtype.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <numbers>
#include <random>
#include <span>
#include <string>
#include <type_traits>

#include "../core/error.hpp"
#include "../core/params.hpp"
#include "../core/tensor.hpp"

namespace symflow {

// Draws the portable uniform and normal variates described above from one engine.
class portable_sampler {
 public:
  explicit portable_sampler(std::mt19937_64& engine) : engine_(&engine) {}

  // A double in [0, 1).
  double uniform() { return static_cast<double>((*engine_)() >> 11) * 0x1.0p-53; }
  // A double in (0, 1]: Box-Muller takes its logarithm.
  double uniform_positive() { return static_cast<double>(((*engine_)() >> 11) + 1) * 0x1.0p-53; }
  // A standard normal double. The second value of each Box-Muller pair is kept for the next call.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double radius = std::sqrt(-2.0 * std::log(uniform_positive()));
    const double angle = 2.0 * std::numbers::pi * uniform();
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

 private:
  std::mt19937_64* engine_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// How many inputs feed each output unit and how many outputs each input feeds. For a rank-2 weight
// [in, out] these are its extents; for a convolution kernel [kh, kw, in, out] (HWIO) each is
// multiplied by the receptive field kh * kw; a vector [n] (a bias) counts n both ways.
struct fans {
  double in = 1, out = 1;
};

inline fans fans_of(std::span<const std::size_t> extents) {
  if (extents.empty()) return {};
  if (extents.size() == 1) return {double(extents[0]), double(extents[0])};
  double receptive_field = 1;
  for (std::size_t i = 0; i + 2 < extents.size(); ++i) receptive_field *= double(extents[i]);
  return {receptive_field * double(extents[extents.size() - 2]), receptive_field * double(extents.back())};
}

// Each initializer fills values given the tensor's fans and a sampler.
struct uniform_init {
  double low = -0.05, high = 0.05;
  double sample(const fans&, portable_sampler& s) const { return low + (high - low) * s.uniform(); }
};
struct normal_init {
  double mean = 0, stddev = 0.05;
  double sample(const fans&, portable_sampler& s) const { return mean + stddev * s.normal(); }
};
// Keeps the variance of activations and gradients about equal across layers with (roughly) linear or
// tanh units: Var = 2 / (fan_in + fan_out).
struct glorot_uniform {
  double gain = 1;
  double sample(const fans& f, portable_sampler& s) const {
    const double limit = gain * std::sqrt(6.0 / (f.in + f.out));
    return limit * (2 * s.uniform() - 1);
  }
};
struct glorot_normal {
  double gain = 1;
  double sample(const fans& f, portable_sampler& s) const { return gain * std::sqrt(2.0 / (f.in + f.out)) * s.normal(); }
};
// For ReLU layers, which zero half their inputs: Var = 2 / fan_in keeps the forward signal's scale.
struct he_uniform {
  double sample(const fans& f, portable_sampler& s) const { return std::sqrt(6.0 / f.in) * (2 * s.uniform() - 1); }
};
struct he_normal {
  double sample(const fans& f, portable_sampler& s) const { return std::sqrt(2.0 / f.in) * s.normal(); }
};
struct constant_init {
  double value = 0;
  double sample(const fans&, portable_sampler&) const { return value; }
};
inline constexpr constant_init zeros{0.0};

template <class I>
concept initializer = requires(const I& init, const fans& f, portable_sampler& s) {
  { init.sample(f, s) } -> std::convertible_to<double>;
};

// Any initializer behind one type: what a layer holds, so that its user may pick the initializer of
// each parameter at run time (dense's weights he_normal{}, its bias constant_init{0.1}).
class any_initializer {
 public:
  template <initializer I>
    requires(!std::is_same_v<std::remove_cvref_t<I>, any_initializer>)
  any_initializer(I init)  // NOLINT: implicit, as `.weights = he_normal{}` reads
      : sample_([init](const fans& f, portable_sampler& s) { return static_cast<double>(init.sample(f, s)); }) {}
  double sample(const fans& f, portable_sampler& s) const { return sample_(f, s); }

 private:
  std::function<double(const fans&, portable_sampler&)> sample_;
};

// Fills a tensor or a contiguous view element by element in storage order.
template <class Tensor, initializer Init>
  requires(is_tensor_v<std::remove_cvref_t<Tensor>> || is_tensor_view_v<std::remove_cvref_t<Tensor>>)
void fill_initial(Tensor&& t, const Init& init, std::mt19937_64& engine) {
  using T = typename std::remove_cvref_t<Tensor>::value_type;
  static_assert(std::is_floating_point_v<T>, "symflow: initializers fill float or double tensors");
  if constexpr (is_tensor_view_v<std::remove_cvref_t<Tensor>>)
    if (!t.is_contiguous()) throw value_error("fill_initial: the view is not contiguous");
  const auto& e = t.extents();
  const fans f = fans_of(std::span<const std::size_t>(e.data(), e.size()));
  portable_sampler sampler(engine);
  T* out = t.data();
  for (std::size_t i = 0, n = t.size(); i < n; ++i) out[i] = static_cast<T>(init.sample(f, sampler));
}

// Gives the variable a freshly drawn value in the store (replacing any value it had). Variables
// have static shapes; a variable with a dyn extent has no shape to draw for and is rejected.
template <class Variable, initializer Init>
void initialize(params& store, const Variable& variable, const Init& init, std::mt19937_64& engine) {
  using T = typename Variable::value_type;
  using S = typename Variable::shape_type;
  static_assert(Variable::kind == node_kind::variable, "symflow: initialize takes a variable");
  static_assert(S::is_static, "symflow: initialize needs a variable whose shape has no dyn extent");
  (void)variable;
  tensor<T, S> value(S::extents, uninitialized);
  fill_initial(value, init, engine);
  store.set(std::string(Variable::name.view()), value);
}

// As above with an engine seeded for this variable alone.
template <class Variable, initializer Init>
void initialize(params& store, const Variable& variable, const Init& init, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  initialize(store, variable, init, engine);
}

}  // namespace symflow
