// The op laws (op_laws.hpp) for part 3 of 9 of the op list.
#include "op_laws.hpp"

TEST(OpLaws, ListedOpsFrom20) { op_laws::check_listed_ops<20, 30>(); }
