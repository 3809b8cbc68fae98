// Evaluating x * w with x fed but the variable w neither fed nor in a params store: one error.
// expect-first-line: error: .*"eval: variable w: f32\[\?\] has no value; pass `w = tensor` or a params store to eval"
// expect-max-errors: 1
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<dyn>>();
  auto w = variable<"w", float, shape<dyn>>();
  const tensor<float, shape<3>> xv{1, 2, 3};
  auto r = eval(x * w, x = xv);
  (void)r;
}
