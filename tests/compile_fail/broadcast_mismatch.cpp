// `a + b` with shapes [3,4] and [5]: the extents 4 and 5 cannot be broadcast.
// expect-first-line: error: .*"add: f32\[3,4\] and f32\[5\] cannot be broadcast: extents 4 and 5 differ"
// expect-max-errors: 1
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto a = placeholder<"a", float, shape<3, 4>>();
  auto b = placeholder<"b", float, shape<5>>();
  auto c = a + b;
  (void)c;
}
