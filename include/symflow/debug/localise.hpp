#pragma once
// The check_numerics localiser: including this header in any one translation unit makes every
// evaluation that finds NaN or infinities re-run its expressions node by node in the interpreter,
// with every value checked, and report the first node whose result is not finite, with its operands'
// health and the source line where it was written (eval/nonfinite_report.hpp).
#include "../runtime/interpreter.hpp"
#include "../eval/nonfinite_report.hpp"

namespace symflow {

inline void localise_nonfinite(const graph& g, const runtime_feeds& feeds, const params* store) {
  interpreter_options node_by_node;
  node_by_node.fuse = false;
  node_by_node.check_numerics = true;
  node_by_node.allow_unused_feeds = true;  // eval ignores feeds its expressions do not read; so does its re-run
  interpreter(g, node_by_node).run(feeds, store);
}

namespace detail {
inline const bool nonfinite_localiser_installed = (nonfinite_localiser_hook().store(&localise_nonfinite), true);
}  // namespace detail

}  // namespace symflow
