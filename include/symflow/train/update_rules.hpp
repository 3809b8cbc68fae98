#pragma once
// The optimisers' update rules, each one fused pass over a parameter's elements (fused_update.hpp),
// written over flat views: a parameter is contiguous, and every rule is elementwise, so its shape
// does not matter. One instantiation per dtype then serves every parameter of every model — where
// a rule instantiated per parameter shape costs each training program about 40 KiB of object code
// and seconds of g++ per optimiser — and float and double are compiled once, in the library that
// holds the runtime's op tables (core/separate_compilation.hpp), when the program is built with
// SYMFLOW_SEPARATE_COMPILATION.
//
// The scalars arrive in the parameter's dtype, rounded once per step: the same values the
// per-shape rules fed.
#include <cstddef>
#include <limits>
#include <type_traits>

#include "../core/eigen.hpp"

#include "../core/parallel.hpp"
#include "../core/separate_compilation.hpp"
#include "../core/tensor.hpp"
#include "../expr/leaves.hpp"
#include "../ops/all.hpp"
#include "fused_update.hpp"

namespace symflow::detail {

template <class T>
using flat_view = tensor_view<T, shape<dyn>>;

template <class T>
struct adam_scalars {
  T beta1, beta2, one_minus_beta1, one_minus_beta2;
  T step_size;                 // lr / (1 - beta1^t)
  T inverse_sqrt_correction2;  // 1 / sqrt(1 - beta2^t)
  T epsilon;
};

// The leaves of a rule: the tensors it reads are bound to these placeholders.
template <class T>
struct flat_update_leaves {
  placeholder<"parameter", T, shape<dyn>> parameter;
  placeholder<"gradient", T, shape<dyn>> gradient;
  placeholder<"state_a", T, shape<dyn>> state_a;  // velocity, or Adam's first moment
  placeholder<"state_b", T, shape<dyn>> state_b;  // Adam's second moment
};

template <class T>
tensor<T, shape<>> scalar_of(T v) {
  return tensor<T, shape<>>(v);
}

// w <- w + (-lr) g, rounded once per element: a fused multiply-add where the machine has one
// (Eigen's pmadd), as PyTorch's add_(g, alpha=-lr) computes it and as the GEMM rounds when
// nn::trainer adds -lr times a weight's gradient into the weight inside the gradient's product
// (eval/cpu/accumulate.hpp): the two give the same bits.
template <class T>
void sgd_update(flat_view<T> w, flat_view<const T> g, T learning_rate) {
  namespace ei = Eigen::internal;
  using P = typename ei::packet_traits<T>::type;
  constexpr std::size_t lanes = std::size_t(ei::packet_traits<T>::size);  // (not of P: GCC drops its attributes)
  const T scale = -learning_rate;
  const P scales = ei::pset1<P>(scale);
  T* wd = w.data();
  const T* gd = g.data();
  cpu::parallel_ranges(w.size(), lanes, [&](int, std::size_t begin, std::size_t end) {
    std::size_t i = begin;
    for (; i + lanes <= end; i += lanes)
      ei::pstoreu(wd + i, ei::pmadd(scales, ei::ploadu<P>(gd + i), ei::ploadu<P>(wd + i)));
    // The tail as Eigen's GEMM writes its scalar tail, so that the compiler contracts both or
    // neither (cmake/library/gemm.cpp compiles the GEMM with the same -ffp-contract as this).
    for (; i < end; ++i) wd[i] = scale * gd[i] + wd[i];
  });
}

// v <- mu v + g;  w <- w - lr v
template <class T>
void momentum_update(flat_view<T> w, flat_view<T> velocity, flat_view<const T> g, T learning_rate, T momentum) {
  const flat_update_leaves<T> in;
  const auto lr = placeholder<"learning_rate", T, shape<>>();
  const auto mu = placeholder<"momentum", T, shape<>>();
  const auto new_velocity = mu * in.state_a + in.gradient;
  fused_update(std::tie(velocity, w), new_velocity, in.parameter - lr * new_velocity, in.parameter = w,
               in.gradient = g, in.state_a = velocity, lr = scalar_of(learning_rate), mu = scalar_of(momentum));
}

// m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;  w <- w - alpha m / (sqrt(v) c2 + eps)
//
// A first moment below the smallest normal number is stored as zero, and the second moment with
// it when it is below that too. A weight whose gradient stays zero (an input pixel that is always
// 0, a dead unit) has moments that decay geometrically into the subnormal range, v at beta2 =
// 0.999 for about 16 000 steps; x86 computes on subnormals in microcode, and at batch 1 the MLP's
// Adam step took 5x its time. This step still uses the moments as computed; what is left out of
// the next ones is a first moment's contribution below 1e-19 alpha while v is normal (m goes
// first: beta1 < beta2), and v is dropped only together with m. By value, not by the CPU's
// flush-to-zero mode: the same bits on every machine, and no other computation on any thread is
// touched. NaN stays NaN.
template <class T>
void adam_update(flat_view<T> w, flat_view<T> m, flat_view<T> v, flat_view<const T> g, const adam_scalars<T>& s) {
  const flat_update_leaves<T> in;
  const auto b1 = placeholder<"beta1", T, shape<>>();
  const auto b2 = placeholder<"beta2", T, shape<>>();
  const auto one_minus_b1 = placeholder<"one_minus_beta1", T, shape<>>();
  const auto one_minus_b2 = placeholder<"one_minus_beta2", T, shape<>>();
  const auto alpha = placeholder<"step_size", T, shape<>>();
  const auto correction2 = placeholder<"inverse_sqrt_correction2", T, shape<>>();
  const auto eps = placeholder<"epsilon", T, shape<>>();
  const auto smallest = placeholder<"smallest_normal", T, shape<>>();
  const auto decayed_m = b1 * in.state_a + one_minus_b1 * in.gradient;
  const auto decayed_v = b2 * in.state_b + one_minus_b2 * square(in.gradient);
  // The step reads the moments as computed; only what is stored is flushed. (Reading the flushed
  // ones instead made the weight's tree too large for one pass, eval/cpu/evaluators.hpp's fusion_limit.)
  const auto new_m = where(abs(decayed_m) < smallest, zero<T>{}, decayed_m);
  const auto new_v = where(maximum(abs(decayed_m), decayed_v) < smallest, zero<T>{}, decayed_v);
  const auto new_w = in.parameter - alpha * decayed_m / (sqrt(decayed_v) * correction2 + eps);
  fused_update(std::tie(m, v, w), new_m, new_v, new_w, in.parameter = w, in.gradient = g, in.state_a = m,
               in.state_b = v, b1 = scalar_of(s.beta1), b2 = scalar_of(s.beta2),
               one_minus_b1 = scalar_of(s.one_minus_beta1), one_minus_b2 = scalar_of(s.one_minus_beta2),
               alpha = scalar_of(s.step_size), correction2 = scalar_of(s.inverse_sqrt_correction2),
               eps = scalar_of(s.epsilon), smallest = scalar_of(std::numeric_limits<T>::min()));
}

// The instances compiled once under SYMFLOW_SEPARATE_COMPILATION: declared here with KEYWORD
// `extern`, defined with an empty KEYWORD by training_definitions.hpp.
#define SYMFLOW_UPDATE_RULE_INSTANCES(KEYWORD, T)                                                           \
  KEYWORD template void sgd_update<T>(flat_view<T>, flat_view<const T>, T);                                 \
  KEYWORD template void momentum_update<T>(flat_view<T>, flat_view<T>, flat_view<const T>, T, T);           \
  KEYWORD template void adam_update<T>(flat_view<T>, flat_view<T>, flat_view<T>, flat_view<const T>,        \
                                       const adam_scalars<T>&);
#if SYMFLOW_LIBRARY_DECLARED_ONLY
SYMFLOW_UPDATE_RULE_INSTANCES(extern, float)
SYMFLOW_UPDATE_RULE_INSTANCES(extern, double)
#endif

}  // namespace symflow::detail
