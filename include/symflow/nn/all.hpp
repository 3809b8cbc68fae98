#pragma once
// Layer objects, parameter sets and the one-call training step (symflow::nn).
#include "layers.hpp"
#include "parameter.hpp"
#include "parameters.hpp"
#include "recurrent.hpp"
#include "trainer.hpp"
