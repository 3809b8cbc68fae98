#pragma once
// trace_eval(spec, exprs..., feeds..., [params]): evaluates compiled expressions (gradients and
// parameter updates are expressions too) through their graph in the interpreter, recording the
// intermediate values the trace spec selects; the untraced work stays fused. profile_eval times it.
#include <tuple>

#include "../eval/cpu/eval.hpp"
#include "../runtime/interpreter.hpp"
#include "../ir/to_graph.hpp"
#include "../eval/nonfinite_report.hpp"
#include "../runtime/trace.hpp"

namespace symflow {

struct traced_run {
  std::vector<runtime_tensor> outputs;
  value_trace trace;
  interpreter_profile profile;
};

namespace detail {
template <class... Args>
traced_run run_through_interpreter(interpreter_options options, const Args&... args) {
  constexpr std::size_t k = detail::leading_expressions<Args...>();
  static_assert(k >= 1, "symflow: trace_eval takes a trace spec, expressions, then feeds and optionally params");
  const auto all = tie_plain(args...);  // not std::tie: see core/plain_tuple.hpp
  return [&]<std::size_t... X, std::size_t... S>(std::index_sequence<X...>, std::index_sequence<S...>) {
    const graph g = to_graph(get<X>(all)...);
    runtime_feeds feeds;
    const params* store = nullptr;
    (detail::add_localising_feed(feeds, store, get<k + S>(all)), ...);
    options.allow_unused_feeds = true;  // as eval: feeds the expressions do not read are ignored
    const interpreter run(g, options);
    traced_run out;
    out.outputs = run.run(feeds, store);
    out.trace = run.last_trace();
    out.profile = run.last_profile();
    return out;
  }(std::make_index_sequence<k>{}, std::make_index_sequence<sizeof...(Args) - k>{});
}
}  // namespace detail

template <class... Args>
traced_run trace_eval(const trace_spec& spec, const Args&... args) {
  interpreter_options options;
  options.trace = &spec;
  return detail::run_through_interpreter(options, args...);
}

// profile_eval(exprs..., feeds..., [params]): the same evaluation timed per fused pass, reduction,
// view and kernel; profile.slowest(n) lists the slowest.
template <class... Args>
traced_run profile_eval(const Args&... args) {
  interpreter_options options;
  options.profile = true;
  return detail::run_through_interpreter(options, args...);
}

}  // namespace symflow
