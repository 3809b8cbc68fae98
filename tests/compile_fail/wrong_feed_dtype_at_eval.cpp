// A double tensor bound with feed<"x"> (no check at binding) reaches eval for the float placeholder x.
// expect-first-line: error: .*"eval: placeholder x: f32\[3\] is fed a tensor of dtype f64"
// expect-max-errors: 1
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<3>>();
  const tensor<double, shape<3>> xv{1, 2, 3};
  auto r = eval(x * 2.f, feed<"x">(xv));
  (void)r;
}
