// A double tensor fed to the float placeholder x.
// expect: static assertion failed: symflow: the value fed to a placeholder or variable has the wrong dtype
// expect: with V = symflow::tensor<double, symflow::shape<3> >;.* Name = symflow::fixed_string<2>{"x"}; T = float; S = symflow::shape<3>
// expect-first-line: static assertion failed: symflow: the value fed to a placeholder or variable has the wrong dtype
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<3>>();
  const tensor<double, shape<3>> xv{1, 2, 3};
  auto r = eval(x * 2.f, x = xv);
  (void)r;
}
