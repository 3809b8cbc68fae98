// The op list: the one place an op is registered. Each line names an op's file; that file holds
// everything about the op (name, rules, scalar/packet/device functions, derivative, simplifications)
// and, at its end, its entries: `SYMFLOW_LISTED(kind, type)` for each op it defines, with one
// representative instantiation where the op's attributes are template arguments.
//
// This file is read twice, so it has no include guard. Read plainly (ops/all.hpp), it defines every
// op. Read again with SYMFLOW_LISTED defined (ir/op_registry.hpp), each op file's body is skipped
// by its include guard and only its entries expand: that is how the graph registry, JSON names, the
// runtime builder and interpreter, NVRTC code generation and the law tests (tests/ops/) learn of an
// op without naming it.
//
// Adding an op: write its file (ops/softsign.hpp is a small example) and add one line here.
#include "abs.hpp"
#include "add.hpp"
#include "cast.hpp"
#include "concat.hpp"
#include "conv2d.hpp"
#include "conv2d_backprop_filter.hpp"
#include "conv2d_backprop_input.hpp"
#include "cos.hpp"
#include "div.hpp"
#include "dropout.hpp"
#include "equal.hpp"
#include "exp.hpp"
#include "expand_as.hpp"
#include "expand_dims.hpp"
#include "greater.hpp"
#include "greater_equal.hpp"
#include "less.hpp"
#include "less_equal.hpp"
#include "log.hpp"
#include "log1p.hpp"
#include "matmul.hpp"
#include "max.hpp"
#include "maximum.hpp"
#include "mean.hpp"
#include "min.hpp"
#include "minimum.hpp"
#include "mul.hpp"
#include "neg.hpp"
#include "not_equal.hpp"
#include "one_hot.hpp"
#include "pool2d.hpp"
#include "pow.hpp"
#include "reduced_count.hpp"
#include "relu.hpp"
#include "reshape.hpp"
#include "rsqrt.hpp"
#include "scatter.hpp"
#include "sigmoid.hpp"
#include "sign.hpp"
#include "sin.hpp"
#include "slice.hpp"
#include "softmax_cross_entropy.hpp"
#include "softplus.hpp"
#include "softsign.hpp"
#include "sqrt.hpp"
#include "square.hpp"
#include "sub.hpp"
#include "sum.hpp"
#include "tanh.hpp"
#include "transpose.hpp"
#include "where.hpp"
