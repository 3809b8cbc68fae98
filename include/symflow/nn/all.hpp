#pragma once
// Layer objects, parameter sets, the one-call training step (symflow::nn) and scan.
#include "attention.hpp"
#include "batch_norm.hpp"
#include "layers.hpp"
#include "parameter.hpp"
#include "parameters.hpp"
#include "recurrent.hpp"
#include "scan.hpp"
#include "state_updates.hpp"
#include "trainer.hpp"
