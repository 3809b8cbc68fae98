#pragma once
// What one CUDA evaluation reads and owns: its options, device feeds, which arguments are sources
// (feeds, parameter stores, options), and the context that binds them and holds the evaluation's
// device memory. The evaluator tree (evaluators.hpp) is built against it.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <symflow/core/params.hpp>
#include <symflow/core/tensor.hpp>
#include <symflow/eval/cpu/context.hpp>
#include <symflow/expr/leaves.hpp>
#include <symflow/expr/same_value.hpp>

#include "device_tensor.hpp"
#include "runtime.hpp"

namespace symflow::cuda {

// Per-evaluation settings, passed among the feeds: cuda::eval(e, feeds..., cuda::options{s, true}).
struct options {
  stream_ref stream{};       // where the work is queued (default: the legacy default stream)
  bool allow_tf32 = false;   // let cuBLAS use TF32 tensor cores for f32 matmuls (about 1e-3 relative error)
  // A result of the form act(matmul(a, b) + bias) runs as one cuBLASLt GEMM whose epilogue adds the
  // bias and applies the activation (gemm_epilogue.hpp). Off: the GEMM, then one fused pass over its
  // product, as for any other expression (for comparison, or should a cuBLASLt version misbehave).
  bool gemm_epilogues = true;
};

// A named leaf bound to device memory for one evaluation: cuda::feed(x, dev_tensor).
template <fixed_string Name, class T, std::size_t Rank>
struct device_feed {
  static constexpr auto name = Name;
  static constexpr bool is_device_feed = true;
  using value_type = T;
  static constexpr std::size_t rank = Rank;
  device_view<const T, dyn_shape<Rank>> value;
};

namespace detail {

// One address per node type: compared instead of typeid, whose equality test may compare the long
// mangled names of expression types.
template <class Node>
inline constexpr char type_tag = 0;

// A value materialised during one evaluation (a matmul, a reduction), remembered so that an
// identical node elsewhere in the expressions being evaluated (same type, same runtime data: a
// gradient repeats its forward pass many times) reads it instead of computing it again.
struct shared_value {
  const void* type = nullptr;  // &type_tag<Node>
  const void* node = nullptr;
  bool (*same)(const void*, const void*) = nullptr;
  const void* data = nullptr;
  std::size_t rank = 0;
  std::array<std::size_t, dev::max_rank> extents{}, strides{};
};

template <class S>
inline constexpr bool is_device_feed_v = requires { S::is_device_feed; };
// symflow::feed_binding (x = host_tensor): detected by its members.
template <class S>
inline constexpr bool is_host_feed_v =
    !is_device_feed_v<S> && requires(const S& s) {
      S::name;
      S::rank;
      typename S::value_type;
      s.value.strides();
    };
template <class S>
inline constexpr bool is_host_params_v = std::is_same_v<S, params>;
template <class S>
inline constexpr bool is_device_params_v = std::is_same_v<S, device_params>;
template <class S>
inline constexpr bool is_options_v = std::is_same_v<S, options>;
template <class S>
inline constexpr bool is_source_v =
    is_device_feed_v<S> || is_host_feed_v<S> || is_host_params_v<S> || is_device_params_v<S> || is_options_v<S>;

// Conditions of the static_asserts on feeds: their template arguments name the leaf. (The CPU
// evaluator names the leaf in the message itself, expr/diagnostics.hpp; that spells the message as a
// class-type template argument, which device compilation is kept clear of.)
template <class Leaf, bool Found>
struct every_placeholder_is_fed {
  static constexpr bool value = Found;
};
template <class Leaf, bool Found>
struct every_variable_has_a_value {
  static constexpr bool value = Found;
};
template <class Leaf, class FedType>
struct fed_dtype_matches_leaf {
  static constexpr bool value = std::is_same_v<typename Leaf::value_type, FedType>;
};
template <class Leaf, std::size_t FedRank>
struct fed_rank_matches_leaf {
  static constexpr bool value = Leaf::rank == FedRank;
};

// What one evaluation reads (feeds, parameter stores, options) and the device memory it owns for
// materialised intermediates and uploads, released (stream-ordered) when the evaluation ends.
template <class... Sources>
struct context {
  static_assert((is_source_v<Sources> && ...),
                "symflow: cuda::eval takes an expression followed by feeds (cuda::feed(x, device_tensor) or "
                "x = host_tensor), optionally a params or cuda::device_params store and cuda::options");
  static_assert((std::size_t(is_host_params_v<Sources>) + ... + 0) <= 1, "symflow: pass at most one params store");
  static_assert((std::size_t(is_device_params_v<Sources>) + ... + 0) <= 1,
                "symflow: pass at most one cuda::device_params store");
  static_assert((std::size_t(is_options_v<Sources>) + ... + 0) <= 1, "symflow: pass at most one cuda::options");

  std::tuple<const Sources&...> sources;
  cudaStream_t stream = nullptr;
  bool allow_tf32 = false;
  bool gemm_epilogues = true;
  std::vector<void*> workspace;
  char* chunk_cursor = nullptr;
  std::size_t chunk_left = 0;
  std::size_t next_chunk = std::size_t(4) << 20;
  std::vector<std::pair<const void*, const void*>> uploaded;  // host pointer -> device copy
  std::vector<shared_value> shared;

  explicit context(const Sources&... s) : sources(s...) {
    if constexpr (options_index() != npos) {
      const options& o = std::get<options_index()>(sources);
      stream = o.stream.handle;
      allow_tf32 = o.allow_tf32;
      gemm_epilogues = o.gemm_epilogues;
    }
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;
  ~context() {
    for (void* p : workspace) detail::device_free(p, stream);
  }

  // Scratch memory, carved from chunks of the stream-ordered pool that grow geometrically: a few
  // allocations per evaluation instead of one per intermediate, which matters most inside a CUDA
  // graph (each cudaMallocAsync/cudaFreeAsync captured becomes a node of its own).
  template <class T>
  T* allocate(std::size_t count) {
    constexpr std::size_t alignment = 256;
    const std::size_t bytes = (count * sizeof(T) + alignment - 1) / alignment * alignment;
    if (bytes == 0) return nullptr;
    if (bytes > chunk_left) {
      const std::size_t chunk = std::max(bytes, next_chunk);
      next_chunk = std::min<std::size_t>(chunk * 2, std::size_t(1) << 30);
      chunk_cursor = static_cast<char*>(detail::device_allocate(chunk, stream));
      workspace.push_back(chunk_cursor);
      chunk_left = chunk;
    }
    T* p = reinterpret_cast<T*>(chunk_cursor);
    chunk_cursor += bytes;
    chunk_left -= bytes;
    return p;
  }
  // Copies `count` host elements to the device once per evaluation (a leaf used twice is uploaded once).
  template <class T>
  const T* upload(const T* host, std::size_t count) {
    for (const auto& [h, d] : uploaded)
      if (h == host) return static_cast<const T*>(d);
    T* dev = allocate<T>(count);
    if (count) SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(dev, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
    uploaded.emplace_back(host, dev);
    return dev;
  }

  template <class Node>
  const shared_value* find_shared(const Node& node) const {
    for (const shared_value& v : shared)
      if (v.type == &type_tag<Node> && v.same(v.node, &node)) return &v;
    return nullptr;
  }
  template <class Node>
  void remember(const Node& node, shared_value v) {
    v.type = &type_tag<Node>;
    v.node = &node;
    v.same = [](const void* a, const void* b) {
      return same_value(*static_cast<const Node*>(a), *static_cast<const Node*>(b));
    };
    shared.push_back(v);
  }

  static constexpr std::size_t npos = std::size_t(-1);
  template <fixed_string Name>
  static consteval std::size_t feed_index() {
    std::size_t found = npos, i = 0;
    ((found = (found == npos && feed_matches<Name, Sources>()) ? i : found, ++i), ...);
    return found;
  }
  template <template <class> class Pred>
  static consteval std::size_t index_of() {
    std::size_t found = npos, i = 0;
    ((found = (found == npos && Pred<Sources>::value) ? i : found, ++i), ...);
    return found;
  }
  template <class S>
  struct host_params_pred : std::bool_constant<is_host_params_v<S>> {};
  template <class S>
  struct device_params_pred : std::bool_constant<is_device_params_v<S>> {};
  template <class S>
  struct options_pred : std::bool_constant<is_options_v<S>> {};
  static consteval std::size_t host_params_index() { return index_of<host_params_pred>(); }
  static consteval std::size_t device_params_index() { return index_of<device_params_pred>(); }
  static consteval std::size_t options_index() { return index_of<options_pred>(); }

 private:
  template <fixed_string Name, class S>
  static consteval bool feed_matches() {
    if constexpr (is_device_feed_v<S> || is_host_feed_v<S>) return S::name == Name;
    else return false;
  }
};

}  // namespace detail
}  // namespace symflow::cuda
