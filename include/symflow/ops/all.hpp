#pragma once
// Every op (list.hpp) and the compositions of ops that have no rules of their own (softmax.hpp).
#include "list.hpp"
#include "activations.hpp"
#include "attention.hpp"
#include "conv1d.hpp"
#include "pool1d.hpp"
#include "losses.hpp"
#include "normalization.hpp"
#include "shape_composites.hpp"
#include "softmax.hpp"
