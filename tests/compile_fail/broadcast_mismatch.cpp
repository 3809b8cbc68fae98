// `a + b` with shapes [3,4] and [5]: the extents 4 and 5 cannot be broadcast.
// expect: static assertion failed: symflow: operand shapes cannot be broadcast together
// expect: operand_shapes_broadcast_for_op<symflow::ops::add_op, symflow::shape<3, 4>, symflow::shape<5> >::value.* evaluates to false
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto a = placeholder<"a", float, shape<3, 4>>();
  auto b = placeholder<"b", float, shape<5>>();
  auto c = a + b;
  (void)c;
}
