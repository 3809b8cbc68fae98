#pragma once
// check_numerics on the GPU, after the kernels found a NaN or an infinity in an output (their device
// flag, read once per evaluation): the evaluation's inputs are copied back to the host (device feeds,
// host feeds, the device and host parameter stores) and handed, with the expressions lowered to a
// graph value, to the CPU localiser (eval/nonfinite_report.hpp, installed by including
// <symflow/debug/localise.hpp> in one translation unit compiled by the C++ compiler). The localiser
// re-runs the graph node by node in the CPU interpreter and throws the same numerics_error the CPU
// backend throws: the first node producing a non-finite value, its op, scoped name, source line,
// dtype, shape, counts and its operands' health. Host code; nothing here reaches device code.
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <symflow/eval/nonfinite_report.hpp>

#include "evaluators.hpp"

namespace symflow::cuda::detail {

// A device view copied into a dense host tensor (whatever its strides).
template <class T, std::size_t R>
tensor<T, dyn_shape<R>> host_copy_of(const device_view<const T, dyn_shape<R>>& v, cudaStream_t s) {
  std::size_t span = 1;
  for (std::size_t i = 0; i < R; ++i) {
    if (v.extents()[i] == 0) return tensor<T, dyn_shape<R>>(v.extents(), uninitialized);
    span += (v.extents()[i] - 1) * v.strides()[i];
  }
  std::vector<unsigned char> staging(span * sizeof(T));
  SYMFLOW_CUDA_CHECK(cudaMemcpyAsync(staging.data(), v.data(), staging.size(), cudaMemcpyDeviceToHost, s));
  SYMFLOW_CUDA_CHECK(cudaStreamSynchronize(s));
  return tensor<T, dyn_shape<R>>::copy_of(
      tensor_view<const T, dyn_shape<R>>(reinterpret_cast<const T*>(staging.data()), v.extents(), v.strides()));
}

template <class Source>
void add_device_localising_feed(runtime_feeds& feeds, params& store, bool& has_store, const Source& s,
                                cudaStream_t stream) {
  if constexpr (is_device_feed_v<Source>) {
    feeds.insert_or_assign(std::string(Source::name.view()), runtime_tensor(host_copy_of<typename Source::value_type, Source::rank>(s.value, stream)));
  } else if constexpr (is_host_feed_v<Source>) {
    using T = typename Source::value_type;
    feeds.insert_or_assign(std::string(Source::name.view()),
                           runtime_tensor(tensor<T, dyn_shape<Source::rank>>::copy_of(s.value)));
  } else if constexpr (is_host_params_v<Source>) {
    // Device entries (added below or before) win over host entries of the same name.
    for (const std::string& name : s.names())
      if (!has_store || !store.contains(name)) store.set_entry(name, s.at(name));
    has_store = true;
  } else if constexpr (is_device_params_v<Source>) {
    for (const std::string& name : s.names())
      if (!store.contains(name)) store.set_entry(name, params::entry{dtype::f32, {0}, {}});
    s.download(store, stream);  // replaces the entries it holds
    has_store = true;
  }
  // cuda::options: nothing to feed.
}

// The evaluation's outputs hold NaN or infinities: name the node that produced them first.
template <class... E, class... Sources>
[[noreturn]] void report_nonfinite_on_device(const plain_tuple<const E&...>& exprs, cudaStream_t stream,
                                             const Sources&... sources) {
  if (nonfinite_localiser localise = nonfinite_localiser_hook().load()) {
    runtime_feeds feeds;
    params store;
    bool has_store = false;
    // Device parameters first, so that a host entry of the same name does not replace them.
    auto add = [&](auto device_params_pass, const auto& s) {
      using S = std::remove_cvref_t<decltype(s)>;
      if constexpr (is_device_params_v<S> == decltype(device_params_pass)::value)
        add_device_localising_feed(feeds, store, has_store, s, stream);
    };
    (add(std::true_type{}, sources), ...);
    (add(std::false_type{}, sources), ...);
    symflow::detail::localise_nonfinite_outputs(localise, exprs, feeds, has_store ? &store : nullptr);
    throw numerics_error("cuda::eval", "output", "", dtype::f32, {}, {}, {},
                         "an output of the GPU evaluation holds NaN or infinities, but the node-by-node re-run "
                         "on the CPU interpreter found none (the GPU's arithmetic differs, e.g. TF32 or an "
                         "overflow the CPU rounds differently, or an output overwrote an input it reads)");
  }
  symflow::detail::throw_unlocalised_nonfinite(apply_plain([](const auto&... e) { return to_graph(e...); }, exprs), {},
                                               symflow::detail::no_localiser_linked);
}

}  // namespace symflow::cuda::detail
