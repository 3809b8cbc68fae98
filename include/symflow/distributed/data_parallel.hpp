#pragma once
// Data-parallel training over a communicator (communicator.hpp): every rank holds the whole model
// and the same optimiser state, trains on its shard of each global batch, and the ranks' gradients
// are summed into the global batch's gradient before the same optimiser step runs on every rank.
//
//   distributed::communicator world(argc, argv);
//   distributed::broadcast(world, model, "initial parameters");   // rank 0's values everywhere
//   distributed::gradient_exchange exchange(world);
//   for (...) {
//     const auto rows = distributed::shard_of(batch.size(), world);  // this rank's rows
//     eval_into(std::tie(g1, g2), grad(loss, W1), grad(loss, W2), x = images[rows], ...);
//     exchange.sum(gradients, rows.weight);                          // the global batch's gradient
//     opt.step(model, state, variables, gradients);                  // the same on every rank
//   }
//
// A rank's loss is the mean over its rows; its gradient, weighted by its share of the batch
// (rows / global batch size) and summed over the ranks, is the gradient of the mean over the
// global batch, whatever the batch's split. The sum is exact up to float rounding of the order of
// summation, and the same bits on every rank (communicator::allreduce_sum), so the replicas stay
// identical without re-broadcasting parameters.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../core/eigen.hpp"

#include "../core/dtype.hpp"
#include "../core/params.hpp"
#include "../core/sha256.hpp"
#include "../train/checkpoint.hpp"
#include "../train/named_parameters.hpp"
#include "communicator.hpp"
#include "shard.hpp"

namespace symflow::distributed {

inline shard shard_of(std::size_t n, const communicator& c) { return shard_of(n, c.rank(), c.size()); }

// Sums the ranks' gradients, each weighted by its rank's share of the batch, in one contiguous
// buffer per dtype (f32, f64), and checks first that every rank sends the same number of elements
// (a model that differs between ranks is an error, not a silent mix of unrelated numbers).
class gradient_exchange {
 public:
  explicit gradient_exchange(communicator& c) : c_(c) {}

  // Typed gradients (tensors of f32 or f64), replaced in place by the weighted sum over the ranks.
  // A rank with weight 0 (an empty shard) sends zeros whatever its tensors hold.
  template <class... G>
  void sum(std::tuple<G...>& gradients, double weight) {
    static_assert((... && (std::is_same_v<typename G::value_type, float> || std::is_same_v<typename G::value_type, double>)),
                  "distributed::gradient_exchange: gradients are f32 or f64 tensors");
    std::size_t n32 = 0, n64 = 0;
    std::apply([&](const auto&... g) { (((is_f32(g) ? n32 : n64) += g.size()), ...); }, gradients);
    prepare(n32, n64);
    std::size_t o32 = 0, o64 = 0;
    std::apply([&](const auto&... g) { (pack(g.data(), g.size(), weight, o32, o64), ...); }, gradients);
    exchange();
    o32 = o64 = 0;
    std::apply([&](auto&... g) { (unpack(g.data(), g.size(), o32, o64), ...); }, gradients);
  }

  // Runtime gradients (a graph_training_step's): their weighted sum over the ranks, held by this
  // exchange until the next call, in the same order and under the same names.
  const std::vector<named_gradient>& sum(const std::vector<named_gradient>& local, double weight) {
    std::size_t n32 = 0, n64 = 0;
    for (const named_gradient& g : local) {
      if (g.type != dtype::f32 && g.type != dtype::f64)
        throw distributed_error("distributed::gradient_exchange: gradient '" + g.name + "' is " +
                                std::string(dtype_name(g.type)) + ", not f32 or f64");
      (g.type == dtype::f32 ? n32 : n64) += element_count(g);
    }
    prepare(n32, n64);
    std::size_t o32 = 0, o64 = 0;
    for (const named_gradient& g : local) {
      if (g.type == dtype::f32) pack(static_cast<const float*>(g.data), element_count(g), weight, o32, o64);
      else pack(static_cast<const double*>(g.data), element_count(g), weight, o32, o64);
    }
    exchange();
    summed_ = local;
    o32 = o64 = 0;
    for (named_gradient& g : summed_) {
      const std::size_t n = element_count(g);
      g.data = g.type == dtype::f32 ? static_cast<const void*>(next<float>(n, o32, o64))
                                    : static_cast<const void*>(next<double>(n, o32, o64));
    }
    return summed_;
  }

  // The bytes of gradients the last call sent (before padding).
  std::size_t last_bytes() const { return f32_.size() * sizeof(float) + f64_.size() * sizeof(double); }

 private:
  template <class T>
  static constexpr bool is_f32(const T&) {
    return std::is_same_v<typename T::value_type, float>;
  }
  static std::size_t element_count(const named_gradient& g) {
    std::size_t n = 1;
    for (std::size_t e : g.extents) n *= e;
    return n;
  }
  void prepare(std::size_t n32, std::size_t n64) {
    // Every rank's counts, compared on the first exchange and whenever this rank's change: a
    // mismatch would otherwise pair unrelated elements. (A steady training loop sends the same
    // gradients every step, and the check is a collective of its own.)
    if (verified_ && n32 == f32_.size() && n64 == f64_.size()) return;
    if (const auto other = c_.first_differing({n32, n64}, "gradient sizes")) {
      verified_ = false;
      throw distributed_error("distributed::gradient_exchange: " + c_.describe() + " has " + std::to_string(n32) +
                              " f32 and " + std::to_string(n64) + " f64 gradient elements, rank " +
                              std::to_string(other->first) + " has " + std::to_string(other->second[0]) + " and " +
                              std::to_string(other->second[1]) + " (the ranks must train the same model)");
    }
    verified_ = true;
    f32_.resize(n32);
    f64_.resize(n64);
  }
  // The buffer of T's gradients and the offset where the next one goes.
  template <class T>
  T* next(std::size_t n, std::size_t& o32, std::size_t& o64) {
    if constexpr (std::is_same_v<T, float>) return f32_.data() + (o32 += n) - n;
    else return f64_.data() + (o64 += n) - n;
  }
  template <class T>
  void pack(const T* g, std::size_t n, double weight, std::size_t& o32, std::size_t& o64) {
    T* out = next<T>(n, o32, o64);
    using array = Eigen::Array<T, Eigen::Dynamic, 1>;
    Eigen::Map<array> to(out, Eigen::Index(n));
    if (weight == 0) to.setZero();  // NaN times 0 would be NaN
    else to = Eigen::Map<const array>(g, Eigen::Index(n)) * static_cast<T>(weight);  // SIMD whatever the -O level
  }
  template <class T>
  void unpack(T* g, std::size_t n, std::size_t& o32, std::size_t& o64) {
    const T* in = next<T>(n, o32, o64);
    std::copy(in, in + n, g);
  }
  void exchange() {
    c_.allreduce_sum(f32_.data(), f32_.size(), "f32 gradients");
    c_.allreduce_sum(f64_.data(), f64_.size(), "f64 gradients");
  }

  communicator& c_;
  std::vector<float> f32_;
  std::vector<double> f64_;
  std::vector<named_gradient> summed_;
  bool verified_ = false;
};

// Root's store (names, dtypes, extents, values) on every rank: the initial parameters, or what
// rank 0 read from a checkpoint, so that the replicas start identical.
inline void broadcast(communicator& c, params& store, const std::string& what, int root = 0) {
  std::vector<unsigned char> bytes;
  if (c.rank() == root) bytes = encode_checkpoint(store);
  c.broadcast(bytes, what, root);
  if (c.rank() != root) store = decode_checkpoint(bytes, "the " + what + " broadcast by rank " + std::to_string(root)).tensors;
}
// A whole checkpoint (every part and the metadata) from root to every rank.
inline void broadcast(communicator& c, checkpoint& from_root, const std::string& what, int root = 0) {
  std::vector<unsigned char> bytes;
  if (c.rank() == root) bytes = encode_checkpoint(from_root.tensors, from_root.metadata);
  c.broadcast(bytes, what, root);
  if (c.rank() != root) from_root = decode_checkpoint(bytes, "the " + what + " broadcast by rank " + std::to_string(root));
}

// The SHA-256 of a store's names, dtypes, extents and bytes.
inline std::string digest_of(const params& store) {
  sha256 h;
  for (const std::string& name : store.names()) {
    const params::entry& e = store.at(name);
    h.add(name).add(std::string_view("\0", 1)).add(dtype_name(e.type));
    for (std::size_t x : e.extents) h.add(std::to_string(x) + ",");
    h.add(std::string_view(reinterpret_cast<const char*>(e.bytes.data()), e.bytes.size()));
  }
  return h.hex();
}

// Throws distributed_error naming every rank whose store differs from rank 0's in any bit.
inline void check_replicas(communicator& c, const params& store, const std::string& what) {
  const std::string mine = digest_of(store);
  const std::vector<unsigned char> all = c.allgather(std::vector<unsigned char>(mine.begin(), mine.end()), "digests of " + what);
  std::string differ;
  for (int r = 1; r < c.size(); ++r)
    if (std::memcmp(all.data() + std::size_t(r) * mine.size(), all.data(), mine.size()) != 0)
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  if (!differ.empty())
    throw distributed_error("distributed: the " + what + " of rank(s) " + differ + " differ from rank 0's");
}

}  // namespace symflow::distributed
