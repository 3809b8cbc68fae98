// The op laws (op_laws.hpp) for part 1 of 9 of the op list.
#include "op_laws.hpp"

TEST(OpLaws, ListedOpsFrom0) { op_laws::check_listed_ops<0, 10>(); }
