// reshape of a [2,3] operand (6 elements) to [4] (4 elements).
// expect: static assertion failed: symflow: the operand's shape does not fit this op
// expect: operand_shapes_valid_for_op<symflow::ops::reshape_op<symflow::shape<4> >, symflow::shape<2, 3> >::value.* evaluates to false
// expect-first-line: static assertion failed: symflow: the operand's shape does not fit this op
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<2, 3>>();
  auto y = reshape<shape<4>>(x);
  (void)y;
}
