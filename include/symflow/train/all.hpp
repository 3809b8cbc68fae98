#pragma once
// Everything of train/ except checkpoint.hpp, which needs nlohmann-json: include it yourself.
#include "fused_update.hpp"
#include "initializers.hpp"
#include "metrics.hpp"
#include "optimizers.hpp"
#include "progress.hpp"
#include "schedules.hpp"
