// An expression leaf of a storage dtype: expressions compute in the compute dtypes only.
// expect: static assertion failed: symflow: expressions compute in float, double, int32_t, int64_t or bool; a storage type
// expect-first-line: static assertion failed: symflow: expressions compute in float, double, int32_t, int64_t or bool
// expect-max-lines: 40
#include <symflow/symflow.hpp>

int main() {
  using namespace symflow;
  auto x = placeholder<"x", Eigen::half, shape<3>>();
  (void)x;
}
