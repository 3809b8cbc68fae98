#pragma once
// What eval does when check_numerics finds NaN or infinities in an output: the expressions are
// lowered to a graph value with the evaluation's feeds, and handed to the localiser, which re-runs
// them node by node and throws numerics_error naming the first node that produced a non-finite value.
// The localiser (debug/localise.hpp, the interpreter) is linked in by including that header in any
// one translation unit; until then the error names the output only. A function pointer rather than
// a template, so every translation unit instantiates the same eval and only one pays for the
// interpreter's compile time.
#include <atomic>
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

template <class... E, class... Sources>
[[noreturn]] void report_nonfinite(const std::tuple<const E&...>& exprs, const Sources&... sources) {
  if (nonfinite_localiser localise = nonfinite_localiser_hook().load()) {
    const graph g = std::apply([](const auto&... e) { return to_graph(e...); }, exprs);
    runtime_feeds feeds;
    const params* store = nullptr;
    (add_localising_feed(feeds, store, sources), ...);
    localise(g, feeds, store);  // throws numerics_error naming the node
  }
  throw numerics_error("eval", "output", "", dtype::f32, {}, {}, {},
                       "an output holds NaN or infinities (include <symflow/debug/localise.hpp> in one "
                       "translation unit to have the node that produced them named)");
}
}  // namespace detail

}  // namespace symflow
