// The op laws (op_laws.hpp) for part 8 of 9 of the op list, entries 70-75.
#include "op_laws.hpp"

TEST(OpLaws, ListedOpsFrom70) { op_laws::check_listed_ops<70, 76>(); }
