#pragma once
// Former path of symflow/runtime/interpreter.hpp, kept for programs that include it (the folders are layers now:
// docs/design.md, "Folders are layers").
#include "../../runtime/interpreter.hpp"
