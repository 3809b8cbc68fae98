#pragma once
// The batch normalisation layer: scale and shift are trained; the running mean and variance are
// running values (nn/parameter.hpp), updated by the training step and used at inference.
//
//   nn::batch_norm<"bn", 64> bn;
//   auto h = relu(bn(conv(x)));                                   // training: the batch's statistics
//   nn::trainer train(nn::with_updates(loss, bn.updates(conv(x))), nn::parameters(model), adam({}));
//   auto served = eval(bn.inference(conv(x)), x = images, train.model());   // the running averages
//
// As PyTorch's BatchNorm (momentum 0.1, epsilon 1e-5): normalisation with the biased batch variance;
// running = (1 - momentum) * running + momentum * statistic with the unbiased variance; running mean
// 0 and variance 1 at first. Statistics are over every axis but the last (channels of NHWC images,
// features of [N, D] rows).
#include <cstddef>
#include <tuple>

#include "../core/shape.hpp"
#include "../core/source_site.hpp"
#include "../expr/fixed_string.hpp"
#include "../expr/scope.hpp"
#include "../ops/all.hpp"
#include "../train/initializers.hpp"
#include "parameter.hpp"
#include "state_updates.hpp"

namespace symflow::nn {

struct batch_norm_options {
  double epsilon = 1e-5;
  double momentum = 0.1;  // the weight of the new batch's statistic in the running average
  any_initializer scale = constant_init{1.0};
  any_initializer shift = zeros;
};

template <fixed_string Name, std::size_t Channels, class T = float>
struct batch_norm {
  parameter<Name, "gamma", T, shape<Channels>> gamma;
  parameter<Name, "beta", T, shape<Channels>> beta;
  running<Name, "running_mean", T, shape<Channels>> running_mean;
  running<Name, "running_var", T, shape<Channels>> running_var;
  double epsilon, momentum;

  explicit batch_norm(batch_norm_options o = {}, source_site where = source_site::current())
      : gamma(std::move(o.scale), where), beta(std::move(o.shift), where), running_mean(zeros, where),
        running_var(constant_init{1.0}, where), epsilon(o.epsilon), momentum(o.momentum) {
    if (!(momentum >= 0 && momentum <= 1))
      throw value_error("nn::batch_norm '" + std::string(Name.view()) + "': momentum must be in [0, 1], got " +
                        std::to_string(momentum));
  }
  auto layers() const { return std::tie(gamma, beta, running_mean, running_var); }

  // Training mode: normalised with the batch's own mean and (biased) variance.
  template <expression X>
  auto operator()(const X& x, source_site where = source_site::current()) const {
    check_channels<X>();
    return scope(Name.value, [&] { return symflow::batch_norm(x, gamma.var, beta.var, epsilon); }, where);
  }
  // Inference mode: normalised with the running averages.
  template <expression X>
  auto inference(const X& x, source_site where = source_site::current()) const {
    check_channels<X>();
    return scope(
        Name.value,
        [&] { return batch_norm_inference(x, running_mean.var, running_var.var, gamma.var, beta.var, epsilon); }, where);
  }
  // The running averages' new values for a training step on x (the layer's input): a tuple of two
  // state updates, for nn::with_updates.
  template <expression X>
  auto updates(const X& x) const {
    check_channels<X>();
    const auto [batch_mean, batch_variance] = batch_statistics(x);
    const T keep = T(1 - momentum), take = T(momentum);
    return std::tuple{assign(running_mean.var, running_mean.var * keep + batch_mean * take),
                      assign(running_var.var, running_var.var * keep + batch_variance * take)};
  }

 private:
  template <class X>
  static constexpr void check_channels() {
    static_assert(shape_of<X>::rank >= 2, "symflow: nn::batch_norm: x needs a batch axis and a channel axis (the last)");
    if constexpr (shape_of<X>::rank >= 2)
      static_assert(shape_of<X>::extents[shape_of<X>::rank - 1] == Channels,
                    "symflow: nn::batch_norm: x's last axis (its channels) must have the layer's extent");
  }
};

}  // namespace symflow::nn
