#pragma once
// Layer objects: each owns its parameters (variables named "<layer>/<leaf>" with initializers) and
// builds its part of a model when called. Nodes built by a layer are named in its scope, so graph
// pictures, check_numerics reports and TensorBoard show "hidden/matmul", not a bare "matmul".
//
//   nn::dense<"hidden", 784, 256> hidden({.weights = he_normal{}});
//   nn::dense<"logits", 256, 10> output;
//   auto logits = output(relu(hidden(x)));
//
// Initializers follow the common defaults: weights Glorot-uniform, biases zero, normalisation scales
// one and shifts zero, embeddings standard normal (as PyTorch's nn.Embedding).
#include <cstddef>
#include <tuple>

#include "../core/shape.hpp"
#include "../core/source_site.hpp"
#include "../expr/fixed_string.hpp"
#include "../expr/scope.hpp"
#include "../ops/all.hpp"
#include "../train/initializers.hpp"
#include "parameter.hpp"

namespace symflow::nn {

struct dense_options {
  any_initializer weights = glorot_uniform{};
  any_initializer bias = zeros;
};

// y = x W + b for x [n, In]: W [In, Out] and b [Out].
template <fixed_string Name, std::size_t In, std::size_t Out, class T = float>
struct dense {
  parameter<Name, "W", T, shape<In, Out>> W;
  parameter<Name, "b", T, shape<Out>> b;

  explicit dense(dense_options o = {}, source_site where = source_site::current())
      : W(std::move(o.weights), where), b(std::move(o.bias), where) {}
  auto layers() const { return std::tie(W, b); }
  template <expression X>
  auto operator()(const X& x, source_site where = source_site::current()) const {
    return scope(Name.value, [&] { return matmul(x, W.var) + b.var; }, where);
  }
};

struct embedding_options {
  any_initializer table = normal_init{0, 1};
};

// Rows of a table [Vocabulary, Dim] picked by integer ids of any shape: result ids.shape + [Dim].
template <fixed_string Name, std::size_t Vocabulary, std::size_t Dim, class T = float>
struct embedding {
  parameter<Name, "table", T, shape<Vocabulary, Dim>> table;

  explicit embedding(embedding_options o = {}, source_site where = source_site::current())
      : table(std::move(o.table), where) {}
  auto layers() const { return std::tie(table); }
  template <expression Ids>
  auto operator()(const Ids& ids, source_site where = source_site::current()) const {
    return scope(Name.value, [&] { return symflow::embedding(table.var, ids); }, where);
  }
};

struct normalization_options {
  double epsilon = 1e-5;
  any_initializer scale = constant_init{1.0};
  any_initializer shift = zeros;
};

// Layer normalisation over the last axis (of extent Dim): (x - mean) / sqrt(var + eps) * gamma + beta.
template <fixed_string Name, std::size_t Dim, class T = float>
struct layer_norm {
  parameter<Name, "gamma", T, shape<Dim>> gamma;
  parameter<Name, "beta", T, shape<Dim>> beta;
  double epsilon;

  explicit layer_norm(normalization_options o = {}, source_site where = source_site::current())
      : gamma(std::move(o.scale), where), beta(std::move(o.shift), where), epsilon(o.epsilon) {}
  auto layers() const { return std::tie(gamma, beta); }
  template <expression X>
  auto operator()(const X& x, source_site where = source_site::current()) const {
    return scope(Name.value, [&] { return symflow::layer_norm(x, gamma.var, beta.var, epsilon); }, where);
  }
};

// Root-mean-square normalisation over the last axis: x / sqrt(mean(x^2) + eps) * gamma.
template <fixed_string Name, std::size_t Dim, class T = float>
struct rms_norm {
  parameter<Name, "gamma", T, shape<Dim>> gamma;
  double epsilon;

  explicit rms_norm(normalization_options o = {}, source_site where = source_site::current())
      : gamma(std::move(o.scale), where), epsilon(o.epsilon) {}
  auto layers() const { return std::tie(gamma); }
  template <expression X>
  auto operator()(const X& x, source_site where = source_site::current()) const {
    return scope(Name.value, [&] { return symflow::rms_norm(x, gamma.var, epsilon); }, where);
  }
};

// A 2-D convolution of NHWC images with a KH x KW kernel, In -> Out channels, plus a bias per output
// channel. The kernel is HWIO, [KH, KW, In / Groups, Out]; its fans count the receptive field
// (train/initializers.hpp), which with groups is one group's. Dilation and Groups come last so that
// the element type keeps its place: nn::conv2d<"dw", 3, 3, 32, 32, 1, padding::same, float, 1, 32>
// is a depthwise layer.
template <fixed_string Name, std::size_t KH, std::size_t KW, std::size_t In, std::size_t Out,
          std::size_t Stride = 1, padding Padding = padding::same, class T = float, std::size_t Dilation = 1,
          std::size_t Groups = 1>
struct conv2d {
  static_assert(Groups > 0 && In % Groups == 0 && Out % Groups == 0,
                "symflow: nn::conv2d: In and Out channels must both be multiples of Groups");
  parameter<Name, "W", T, shape<KH, KW, In / Groups, Out>> W;
  parameter<Name, "b", T, shape<Out>> b;

  explicit conv2d(dense_options o = {}, source_site where = source_site::current())
      : W(std::move(o.weights), where), b(std::move(o.bias), where) {}
  auto layers() const { return std::tie(W, b); }
  template <expression X>
  auto operator()(const X& x, source_site where = source_site::current()) const {
    return scope(Name.value, [&] { return symflow::conv2d<Stride, Padding, Dilation, Groups>(x, W.var) + b.var; }, where);
  }
};

}  // namespace symflow::nn
