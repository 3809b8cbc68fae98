// The op laws (op_laws.hpp) for part 5 of 9 of the op list.
#include "op_laws.hpp"

TEST(OpLaws, ListedOpsFrom40) { op_laws::check_listed_ops<40, 50>(); }
