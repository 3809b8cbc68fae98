// grad with respect to an integer placeholder: only floating-point leaves have gradients.
// expect: static assertion failed: symflow: grad differentiates with respect to floating-point placeholders and variables only
// expect: differentiable_leaf<symflow::placeholder<symflow::fixed_string<7>\{"labels"\}, int
// expect-first-line: static assertion failed: symflow: grad differentiates with respect to floating-point placeholders and variables only
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<4>>();
  auto labels = placeholder<"labels", int, shape<4>>();
  auto g = grad(sum(x * cast<float>(labels)), labels);
  (void)g;
}
