// The op laws (op_laws.hpp) for part 4 of 9 of the op list.
#include "op_laws.hpp"

TEST(OpLaws, ListedOpsFrom30) { op_laws::check_listed_ops<30, 40>(); }
