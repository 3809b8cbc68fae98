// sum over axis 2 of a rank-2 operand.
// expect: static assertion failed: symflow: a reduction axis is out of range
// expect: reduction_axes_in_range_for_op<symflow::ops::sum_op, symflow::shape<2, 3>, 2>::value.* evaluates to false
// expect-first-line: static assertion failed: symflow: a reduction axis is out of range
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<2, 3>>();
  auto s = sum(x, axes<2>);
  (void)s;
}
