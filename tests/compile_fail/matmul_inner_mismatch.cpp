// matmul of [2,3] by [4,5]: the inner extents 3 and 4 differ.
// expect-first-line: error: .*"matmul: f32\[2,3\] x f32\[4,5\]: inner extents 3 and 4 differ"
// expect-max-errors: 1
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<2, 3>>();
  auto w = variable<"w", float, shape<4, 5>>();
  auto y = matmul(x, w);
  (void)y;
}
