// matmul of [2,3] by [4,5]: the inner extents 3 and 4 differ.
// expect: static assertion failed: symflow: operand shapes do not fit this op
// expect: operand_shapes_valid_for_op<symflow::ops::matmul_op, symflow::shape<2, 3>, symflow::shape<4, 5> >::value.* evaluates to false
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<2, 3>>();
  auto w = variable<"w", float, shape<4, 5>>();
  auto y = matmul(x, w);
  (void)y;
}
