// The op laws (op_laws.hpp) for part 8 of 8 of the op list, to its end (a new range file joins when
// this one holds more than about ten entries: each TU's compile time grows with its range).
#include "op_laws.hpp"

TEST(OpLaws, ListedOpsFrom70) { op_laws::check_listed_ops<70, 100000>(); }
