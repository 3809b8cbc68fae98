// The op laws (op_laws.hpp) for part 7 of 9 of the op list.
#include "op_laws.hpp"

TEST(OpLaws, ListedOpsFrom60) { op_laws::check_listed_ops<60, 70>(); }
