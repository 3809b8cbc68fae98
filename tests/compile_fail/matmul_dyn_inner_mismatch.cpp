// The first layer of an MLP with the wrong weight shape: [?,784] x [100,10], inside a loss.
// The first error names the op and both shapes (dyn as ?); nothing after it fails again.
// expect-first-line: error: .*"matmul: f32\[\?,784\] x f32\[100,10\]: inner extents 784 and 100 differ"
// expect-max-errors: 1
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<dyn, 784>>();
  auto W = variable<"W", float, shape<100, 10>>();
  auto b = variable<"b", float, shape<10>>();
  auto loss = mean(exp(matmul(x, W) + b));
  (void)loss;
}
