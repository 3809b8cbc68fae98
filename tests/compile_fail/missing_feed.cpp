// Evaluating x * w with w fed but the placeholder x not fed: one error, naming x.
// expect-first-line: error: .*"eval: placeholder x: f32\[3\] is not fed; pass `x = tensor` to eval"
// expect-max-errors: 1
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<3>>();
  auto w = variable<"w", float, shape<3>>();
  const tensor<float, shape<3>> wv{1, 2, 3};
  auto r = eval(x * w, w = wv);
  (void)r;
}
