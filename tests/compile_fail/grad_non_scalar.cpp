// grad of a non-scalar expression: reduce it to a scalar first.
// expect: static assertion failed: symflow: grad differentiates a scalar \(rank-0\) expression
// expect: differentiated_expression_is_scalar<symflow::elementwise<symflow::ops::exp_op
// expect-first-line: static assertion failed: symflow: grad differentiates a scalar \(rank-0\) expression
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<4>>();
  auto g = grad(exp(x), x);
  (void)g;
}
