#pragma once
// Losses composed of listed ops (the fused softmax_cross_entropy op is its own file).
#include "expand_dims.hpp"
#include "gather_elements.hpp"
#include "mean.hpp"
#include "neg.hpp"
#include "../expr/scope.hpp"

namespace symflow {

// nll_loss(log_probs, target) = -mean over the batch of log_probs[n, target[n]]: the negative
// log-likelihood of integer targets (i32 or i64) under log-probabilities [N, C] (PyTorch's nll_loss
// and ONNX NegativeLogLikelihoodLoss with reduction "mean", no weights, no ignored index). A target
// outside [-C, C) is an error naming it (gather_elements' rule). With log_softmax(logits) it is the
// cross-entropy; softmax_cross_entropy(logits, labels) computes that in one pass.
template <expression P, expression T>
auto nll_loss(const P& log_probs, const T& target) {
  static_assert(shape_of<P>::rank == 2 && shape_of<T>::rank == 1,
                "symflow: nll_loss: log-probabilities [N, C] and targets [N]");
  name_scope s("nll_loss");
  return -mean(gather_elements<1>(log_probs, unsqueeze<1>(target)));
}

}  // namespace symflow
