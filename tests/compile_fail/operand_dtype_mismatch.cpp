// A float expression plus a double one: operands must have one dtype (convert with cast<T>).
// expect: static assertion failed: symflow: this op does not accept operands of these dtypes
// expect: operand_dtypes_accepted_by_op<symflow::ops::add_op, float, double>::value.* evaluates to false
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto a = placeholder<"a", float, shape<4>>();
  auto b = placeholder<"b", double, shape<4>>();
  auto c = exp(a) + b * 2.0;
  (void)c;
}
