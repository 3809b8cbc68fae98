// The op laws (op_laws.hpp) for part 9 of 9 of the op list, to its end (a new range file joins when
// this one holds more than about ten entries: each TU's compile time and memory grow with its
// range; entries 70 to the end took op_laws_8 to 2.5 GB of g++).
#include "op_laws.hpp"

TEST(OpLaws, ListedOpsFrom76) { op_laws::check_listed_ops<76, 100000>(); }
