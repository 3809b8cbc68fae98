// A float expression plus a double one: operands must have one dtype (convert with cast<T>).
// expect-first-line: error: .*"add: operand dtypes f32 and f64 differ; convert with cast<T>\(x\)"
// expect-max-errors: 1
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto a = placeholder<"a", float, shape<4>>();
  auto b = placeholder<"b", double, shape<4>>();
  auto c = exp(a) + b * 2.0;
  (void)c;
}
