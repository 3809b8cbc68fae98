// Evaluating x * w with w fed but the placeholder x not fed.
// expect: static assertion failed: symflow: a placeholder is not fed
// expect: every_placeholder_is_fed<symflow::placeholder<symflow::fixed_string<2>{"x"}, float, symflow::shape<3> >, false>::value.* evaluates to false
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", float, shape<3>>();
  auto w = variable<"w", float, shape<3>>();
  const tensor<float, shape<3>> wv{1, 2, 3};
  auto r = eval(x * w, w = wv);
  (void)r;
}
