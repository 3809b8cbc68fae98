#pragma once
// What eval does when check_numerics finds NaN or infinities in an output: the expressions are
// lowered to a graph value with the evaluation's feeds, and handed to the localiser, which re-runs
// them node by node and throws numerics_error naming the first node that produced a non-finite value.
// The localiser (debug/localise.hpp, the interpreter) is linked in by including that header in any
// one translation unit; until then the error names the output only. A function pointer rather than
// a template, so every translation unit instantiates the same eval and only one pays for the
// interpreter's compile time.
#include <atomic>
#include <cstring>
#include <tuple>

#include "../core/params.hpp"
#include "../graph/runtime/value.hpp"
#include "../graph/to_graph.hpp"
#include "numerics.hpp"

namespace symflow {

using runtime_feeds = std::map<std::string, runtime_tensor, std::less<>>;
using nonfinite_localiser = void (*)(const graph&, const runtime_feeds&, const params*);

inline std::atomic<nonfinite_localiser>& nonfinite_localiser_hook() {
  static std::atomic<nonfinite_localiser> hook{nullptr};
  return hook;
}

namespace detail {
template <class Source>
void add_localising_feed(runtime_feeds& feeds, const params*& store, const Source& s) {
  if constexpr (std::is_same_v<std::remove_cvref_t<Source>, params>) {
    store = &s;
  } else {
    using T = typename Source::value_type;
    const auto dense = tensor<T, dyn_shape<Source::rank>>::copy_of(s.value);  // contiguous, whatever the strides
    feeds.insert_or_assign(std::string(Source::name.view()), runtime_tensor(dense));
  }
}

// Lowers the expressions to a graph and runs the installed localiser on it with these feeds (it
// throws numerics_error naming the node). Returns when the localiser found nothing. Also used by the
// CUDA backend, with feeds copied back from the device.
template <class... E>
void localise_nonfinite_outputs(nonfinite_localiser localise, const std::tuple<const E&...>& exprs,
                                const runtime_feeds& feeds, const params* store) {
  const graph g = std::apply([](const auto&... e) { return to_graph(e...); }, exprs);
  // A variable fed like a placeholder (eval(e, W = tensor)) is a parameter of the graph, which the
  // interpreter reads from a store: such feeds go into a copy of the store (a feed wins, as in eval).
  params fed_parameters;
  bool any = false;
  for (const graph_leaf& p : g.parameters) {
    const auto it = feeds.find(p.name);
    if (it == feeds.end()) continue;
    if (!any && store) fed_parameters = *store;
    any = true;
    const runtime_tensor& v = it->second;
    params::entry e{v.type(), {v.extents().begin(), v.extents().end()}, aligned_buffer<unsigned char>(v.byte_size())};
    if (v.byte_size()) std::memcpy(e.bytes.data(), v.bytes(), v.byte_size());
    fed_parameters.set_entry(p.name, std::move(e));
  }
  localise(g, feeds, any ? &fed_parameters : store);
}
[[noreturn]] inline void throw_unlocalised_nonfinite() {
  throw numerics_error("eval", "output", "", dtype::f32, {}, {}, {},
                       "an output holds NaN or infinities (include <symflow/debug/localise.hpp> in one "
                       "translation unit to have the node that produced them named)");
}

template <class... E, class... Sources>
[[noreturn]] void report_nonfinite(const std::tuple<const E&...>& exprs, const Sources&... sources) {
  if (nonfinite_localiser localise = nonfinite_localiser_hook().load()) {
    runtime_feeds feeds;
    const params* store = nullptr;
    (add_localising_feed(feeds, store, sources), ...);
    localise_nonfinite_outputs(localise, exprs, feeds, store);  // throws numerics_error naming the node
  }
  throw_unlocalised_nonfinite();
}
}  // namespace detail

}  // namespace symflow
