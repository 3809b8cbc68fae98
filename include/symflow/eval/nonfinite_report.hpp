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
#include <vector>

#include "../core/params.hpp"
#include "../core/plain_tuple.hpp"
#include "../ir/value.hpp"
#include "../ir/to_graph.hpp"
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
void localise_nonfinite_outputs(nonfinite_localiser localise, const plain_tuple<const E&...>& exprs,
                                const runtime_feeds& feeds, const params* store) {
  const graph g = apply_plain([](const auto&... e) { return to_graph(e...); }, exprs);
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
// An output of the evaluation that holds NaN or infinities, with what the evaluation really wrote.
struct nonfinite_output {
  std::size_t index = 0;  // position among the evaluated expressions
  dtype type = dtype::f32;
  std::vector<std::size_t> extents;
  value_health health;
};

// The outputs (tensors, in expression order) that hold NaN or infinities.
template <class... Out>
std::vector<nonfinite_output> nonfinite_outputs(const Out&... outs) {
  std::vector<nonfinite_output> bad;
  std::size_t index = 0;
  (
      [&](const auto& o) {
        using T = typename std::remove_cvref_t<decltype(o)>::value_type;
        const value_health h = health_of(o.data(), o.size());
        if (!h.healthy()) bad.push_back({index, dtype_v<T>, {o.extents().begin(), o.extents().end()}, h});
        ++index;
      }(outs),
      ...);
  return bad;
}

// The error for an output the localiser could not explain (or when no localiser is linked in): it
// names the first bad output's node and its real counts, and says why no node is named.
[[noreturn]] inline void throw_unlocalised_nonfinite(const graph& g, const std::vector<nonfinite_output>& bad,
                                                     std::string why) {
  if (bad.empty()) throw numerics_error("eval", "output", "", dtype::f32, {}, {}, {}, why);  // counts unknown (GPU)
  const nonfinite_output& first = bad.front();
  std::string op = "eval", node = "output " + std::to_string(first.index), location;
  if (first.index < g.outputs.size()) {
    const std::uint32_t id = g.outputs[first.index];
    if (id >= g.first_node_id() && id - g.first_node_id() < g.nodes.size()) {
      const graph_node& n = g.nodes[id - g.first_node_id()];
      op = n.op;
      node = n.name;
      if (n.where.line) location = n.where.file + ":" + std::to_string(n.where.line);
    } else {
      node = g.describe_value(id);
    }
  }
  if (bad.size() > 1) why += " (" + std::to_string(bad.size()) + " outputs hold non-finite values)";
  throw numerics_error(op, node, location, first.type, first.extents, first.health, {},
                       "output " + std::to_string(first.index) + ": " + why);
}

inline constexpr const char* no_localiser_linked =
    "an output holds NaN or infinities (include <symflow/debug/localise.hpp> in one translation unit to have "
    "the node that produced them named)";
inline constexpr const char* localiser_disagreed =
    "the evaluation wrote NaN or infinities, but the node-by-node re-run in the interpreter found every "
    "node finite: the two disagree (please report it with the feeds), so no node can be named";

template <class... E, class... Sources>
[[noreturn]] void report_nonfinite(const plain_tuple<const E&...>& exprs, const std::vector<nonfinite_output>& bad,
                                   const Sources&... sources) {
  const nonfinite_localiser localise = nonfinite_localiser_hook().load();
  if (localise) {
    runtime_feeds feeds;
    const params* store = nullptr;
    (add_localising_feed(feeds, store, sources), ...);
    localise_nonfinite_outputs(localise, exprs, feeds, store);  // throws numerics_error naming the node
  }
  const graph g = apply_plain([](const auto&... e) { return to_graph(e...); }, exprs);
  throw_unlocalised_nonfinite(g, bad, localise ? localiser_disagreed : no_localiser_linked);
}
}  // namespace detail

}  // namespace symflow
