#pragma once
// Former path of symflow/io/json.hpp, kept for programs that include it (the folders are layers now:
// docs/design.md, "Folders are layers").
#include "../io/json.hpp"
