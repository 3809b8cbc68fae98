#pragma once
// Former path of symflow/ir/to_graph.hpp, kept for programs that include it (the folders are layers now:
// docs/design.md, "Folders are layers").
#include "../ir/to_graph.hpp"
