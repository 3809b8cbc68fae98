#pragma once
// The processes of a classifier example's run (classifier_training.hpp): one, or with --distributed
// the ranks that mpirun started (include/symflow/distributed/). The training loop asks the same
// questions either way: which rows of a batch are mine, what are the sums over all ranks, am I the
// one who writes. Examples built without MPI (SYMFLOW_EXAMPLES_MPI unset) refuse --distributed.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <symflow/core/error.hpp>
#include <symflow/core/params.hpp>
#include <symflow/distributed/shard.hpp>
#include <symflow/train/checkpoint.hpp>

#if SYMFLOW_EXAMPLES_MPI
#include <symflow/distributed/data_parallel.hpp>
#endif

namespace symflow::examples {

class training_ranks {
 public:
  // Joins the ranks mpirun started (a process not started by mpirun is one rank of one).
  void start_distributed(int& argc, char**& argv) {
#if SYMFLOW_EXAMPLES_MPI
    world_ = std::make_unique<distributed::communicator>(argc, argv);
    exchange_ = std::make_unique<distributed::gradient_exchange>(*world_);
#else
    (void)argc, (void)argv;
    throw error("--distributed: this program was built without MPI (install libopenmpi-dev and openmpi-bin, then rebuild)");
#endif
  }

  bool distributed() const { return size() > 1; }
  int rank() const {
#if SYMFLOW_EXAMPLES_MPI
    if (world_) return world_->rank();
#endif
    return 0;
  }
  int size() const {
#if SYMFLOW_EXAMPLES_MPI
    if (world_) return world_->size();
#endif
    return 1;
  }
  // After an error this rank has printed: the other ranks would wait for it in their next
  // collective, so the whole job ends.
  void end_job_after_error(int code) {
#if SYMFLOW_EXAMPLES_MPI
    if (world_) world_->abort(code);
#else
    (void)code;
#endif
  }
  // Rank 0 (or the only process) prints, logs, checkpoints and exports.
  bool is_root() const { return rank() == 0; }

  // The rows of a batch of n rows that this process trains on (all of them in one process).
  distributed::shard rows(std::size_t n) const { return distributed::shard_of(n, rank(), size()); }

  // Each rank's gradients, weighted by its share of the batch, summed: the global batch's gradient.
  template <class... G>
  void sum_gradients(std::tuple<G...>& gradients, double weight) {
#if SYMFLOW_EXAMPLES_MPI
    if (!distributed()) return;
    const auto begin = std::chrono::steady_clock::now();
    exchange_->sum(gradients, weight);
    exchange_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    ++exchanges_;
    exchange_bytes_ = exchange_->last_bytes();
#else
    (void)gradients, (void)weight;
#endif
  }
  // What the gradient exchanges cost this rank: "gradient exchange: 812 KiB per step, 0.41 ms (mean of 469)".
  std::string exchange_report() const {
    if (!exchanges_) return "";
    return "gradient exchange: " + std::to_string(exchange_bytes_ / 1024) + " KiB per step, " +
           std::to_string(1e3 * exchange_seconds_ / double(exchanges_)) + " ms (mean of " + std::to_string(exchanges_) + ")";
  }
  // values[0, n) summed over the ranks (losses and counts for the progress bar and the accuracy).
  void sum(double* values, std::size_t n, const std::string& what) {
#if SYMFLOW_EXAMPLES_MPI
    if (distributed()) world_->allreduce_sum(values, n, what);
#else
    (void)values, (void)n, (void)what;
#endif
  }
  // Rank 0's model, optimiser state and first epoch (initialised, or read from its checkpoint) on
  // every rank, so the replicas start identical whatever each rank's disk holds.
  void share(params& model, params& state, std::size_t& first_epoch) {
#if SYMFLOW_EXAMPLES_MPI
    if (!distributed()) return;
    std::vector<unsigned char> bytes;
    if (is_root()) bytes = encode_checkpoint({{"model/", model}, {"optimizer/", state}}, {{"epoch", std::to_string(first_epoch)}});
    world_->broadcast(bytes, "model and optimiser state");
    if (is_root()) return;
    const checkpoint c = decode_checkpoint(bytes, "rank 0's model and optimiser state");
    model = c.part("model/");
    state = c.part("optimizer/");
    first_epoch = std::stoull(c.metadata.at("epoch"));
#else
    (void)model, (void)state, (void)first_epoch;
#endif
  }

 private:
#if SYMFLOW_EXAMPLES_MPI
  std::unique_ptr<distributed::communicator> world_;
  std::unique_ptr<distributed::gradient_exchange> exchange_;
#endif
  double exchange_seconds_ = 0;  // waiting for the other ranks included
  std::size_t exchanges_ = 0, exchange_bytes_ = 0;
};

}  // namespace symflow::examples
