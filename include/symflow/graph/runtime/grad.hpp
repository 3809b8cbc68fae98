#pragma once
// Former path of symflow/runtime/grad.hpp, kept for programs that include it (the folders are layers now:
// docs/design.md, "Folders are layers").
#include "../../runtime/grad.hpp"
