// The op laws (op_laws.hpp) for part 2 of 9 of the op list.
#include "op_laws.hpp"

TEST(OpLaws, ListedOpsFrom10) { op_laws::check_listed_ops<10, 20>(); }
