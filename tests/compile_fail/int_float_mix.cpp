// An int32 placeholder plus a float one: the error names both dtypes and the fix.
// expect-first-line: error: .*"add: operand dtypes i32 and f32 differ; convert with cast<T>\(x\)"
// expect-max-errors: 1
// expect-max-lines: 40
#include <cstdint>
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto n = placeholder<"n", std::int32_t, shape<dyn, 4>>();
  auto x = placeholder<"x", float, shape<dyn, 4>>();
  auto y = sum(n + x);
  (void)y;
}
