// Forward-mode derivatives through a scan are not supported: a compile error that says so, rather
// than a tangent of zero.
// expect: scan: jvp and second derivatives through a scan are not supported
#include <symflow/nn/all.hpp>
#include <symflow/symflow.hpp>

using namespace symflow;

int main() {
  auto xs = placeholder<"xs", float, shape<dyn, 2, 3>>();
  auto h0 = placeholder<"h0", float, shape<2, 4>>();
  nn::gru_cell<"gru", 3, 4> cell;
  auto v = placeholder<"v", float, shape<3, 12>>();
  const auto tangent = jvp(sum(scan(cell, h0, xs)), cell.W.var, v);
  (void)tangent;
}
