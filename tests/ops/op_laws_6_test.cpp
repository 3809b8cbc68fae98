// The op laws (op_laws.hpp) for part 6 of 9 of the op list.
#include "op_laws.hpp"

TEST(OpLaws, ListedOpsFrom50) { op_laws::check_listed_ops<50, 60>(); }
