// A double tensor bound with feed<"x"> (no check at binding) reaches eval for the float placeholder x.
// expect: static assertion failed: symflow: the value fed to this placeholder or variable has the wrong dtype
// expect: fed_dtype_matches_leaf<symflow::placeholder<symflow::fixed_string<2>{"x"}, float, symflow::shape<3> >, double>::value.* evaluates to false
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<3>>();
  const tensor<double, shape<3>> xv{1, 2, 3};
  auto r = eval(x * 2.f, feed<"x">(xv));
  (void)r;
}
