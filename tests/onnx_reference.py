#!/usr/bin/env python3
"""An independent reference for symflow's ONNX export: checks each exported model with ONNX's own
checker (full_check: shape and type inference too) and evaluates it with NumPy, op by op, from the
ONNX operator specification (opset 17) alone; compares with what symflow's interpreter computed.

Usage: onnx_reference.py CASES_DIR
Each case is a folder: model.onnx, input_K.npy (in the order of the graph's inputs), expected_K.npy
(in the order of its outputs). Prints one line per case; exits 1 if any case fails.
"""
import math
import pathlib
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ONNX_TO_NUMPY = {1: np.float32, 11: np.float64, 6: np.int32, 7: np.int64, 9: np.bool_}


def _exact(f):
    """Transcendental functions in float64 (correctly rounded to float32 for float32 data)."""
    return lambda x: f(x.astype(np.float64)).astype(x.dtype)


def _erf(x):
    return _exact(np.vectorize(math.erf, otypes=[np.float64]))(x)


def _reduce(f, node, x, axes):
    keep = bool(_attr(node, "keepdims", 1))
    if axes is None:
        axes = tuple(range(x.ndim))
    with np.errstate(all="ignore"):
        return f(x, axis=tuple(int(a) for a in axes), keepdims=keep)


def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _slice(x, starts, ends, axes, steps):
    index = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[int(a)] = slice(int(s), int(e), int(st))
    return x[tuple(index)]


def evaluate(node, ins):
    op = node.op_type
    unary = {
        "Abs": np.abs, "Ceil": np.ceil, "Floor": np.floor, "Neg": np.negative, "Sign": np.sign,
        "Sqrt": np.sqrt, "Reciprocal": np.reciprocal, "Not": np.logical_not, "Identity": lambda x: x,
        "Round": np.round, "Exp": _exact(np.exp), "Log": _exact(np.log), "Cos": _exact(np.cos),
        "Sin": _exact(np.sin), "Tanh": _exact(np.tanh), "Erf": _erf,
        "Sigmoid": _exact(lambda x: 1 / (1 + np.exp(-x))),
        "Softplus": _exact(lambda x: np.logaddexp(0, x)),
        "Softsign": lambda x: x / (1 + np.abs(x)),
        "Relu": lambda x: np.where(np.isnan(x), x, np.maximum(x, 0)).astype(x.dtype),
    }
    binary = {
        "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power,
        "Equal": np.equal, "Greater": np.greater, "GreaterOrEqual": np.greater_equal, "Less": np.less,
        "LessOrEqual": np.less_equal, "And": np.logical_and, "Or": np.logical_or, "MatMul": np.matmul,
    }
    with np.errstate(all="ignore"):
        if op in unary:
            return unary[op](ins[0])
        if op in binary:
            return binary[op](ins[0], ins[1])
        if op == "Max":
            return _fold(np.maximum, ins)
        if op == "Min":
            return _fold(np.minimum, ins)
        if op == "Where":
            return np.where(ins[0], ins[1], ins[2])
        if op == "PRelu":
            return np.where(ins[0] < 0, ins[1] * ins[0], ins[0]).astype(ins[0].dtype)
        if op == "Selu":
            alpha = _attr(node, "alpha", 1.67326319217681884765625)
            gamma = _attr(node, "gamma", 1.05070102214813232421875)
            x = ins[0].astype(np.float64)
            return (gamma * np.where(x > 0, x, alpha * np.expm1(x))).astype(ins[0].dtype)
        if op == "Cast":
            return ins[0].astype(ONNX_TO_NUMPY[_attr(node, "to")])
        if op == "Shape":
            return np.array(ins[0].shape, dtype=np.int64)
        if op == "Expand":
            return ins[0] * np.ones(tuple(ins[1]), dtype=ins[0].dtype)
        if op == "ReduceSum":
            return _reduce(np.sum, node, ins[0], ins[1] if len(ins) > 1 else None).astype(ins[0].dtype)
        if op in ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"):
            f = {"ReduceMean": np.mean, "ReduceMax": np.max, "ReduceMin": np.min, "ReduceProd": np.prod}[op]
            x = ins[0].astype(np.float64) if op in ("ReduceMean", "ReduceProd") else ins[0]
            return _reduce(f, node, x, _attr(node, "axes")).astype(ins[0].dtype)
        if op == "Transpose":
            return np.transpose(ins[0], _attr(node, "perm"))
        if op == "Reshape":
            return np.reshape(ins[0], tuple(int(e) for e in ins[1]))
        if op == "Unsqueeze":
            return np.expand_dims(ins[0], tuple(int(a) for a in ins[1]))
        if op == "Concat":
            return np.concatenate(ins, axis=_attr(node, "axis"))
        if op == "Slice":
            return _slice(ins[0], ins[1], ins[2], ins[3], ins[4])
        if op == "Conv":
            return _conv(node, ins[0], ins[1])
        if op in ("MaxPool", "AveragePool"):
            return _pool(node, ins[0], op == "MaxPool")
        if op == "Gather":
            return np.take(ins[0], ins[1].astype(np.int64), axis=_attr(node, "axis", 0))
        if op in ("ArgMax", "ArgMin"):
            return _arg_extremum(np.argmax if op == "ArgMax" else np.argmin, node, ins[0])
        if op == "CumSum":
            return _cumsum(ins[0], int(ins[1].reshape(-1)[0]), _attr(node, "exclusive", 0), _attr(node, "reverse", 0))
        if op == "OneHot":
            return _one_hot(node, ins[0], int(ins[1].reshape(-1)[0]), ins[2])
        if op == "SoftmaxCrossEntropyLoss":
            return _softmax_cross_entropy(node, ins[0], ins[1])
        if op == "Pad":
            n = ins[0].ndim
            pads = [int(p) for p in ins[1]]
            mode = _attr(node, "mode", b"constant")
            mode = mode.decode() if isinstance(mode, bytes) else mode
            return np.pad(ins[0], [(pads[a], pads[n + a]) for a in range(n)], mode=mode)
        if op == "GatherElements":
            axis = _attr(node, "axis", 0)
            indices = ins[1].astype(np.int64)
            indices = np.where(indices < 0, indices + ins[0].shape[axis], indices)
            return np.take_along_axis(ins[0], indices, axis=axis)
        if op == "Trilu":
            k = int(ins[1]) if len(ins) > 1 else 0
            keep = np.triu(np.ones(ins[0].shape[-2:], dtype=bool), k) if _attr(node, "upper", 1) else \
                np.tril(np.ones(ins[0].shape[-2:], dtype=bool), k)
            return np.where(keep, ins[0], np.zeros_like(ins[0]))
    raise NotImplementedError(f"the reference has no {op}")


def _one_hot(node, indices, depth, values):
    """Negative indices count from the end; indices outside [-depth, depth) give a row of off."""
    idx = indices.astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)
    out = np.full(idx.shape + (depth,), values[0], dtype=values.dtype)
    for pos in np.ndindex(idx.shape):
        if 0 <= idx[pos] < depth:
            out[pos + (int(idx[pos]),)] = values[1]
    return np.moveaxis(out, -1, _attr(node, "axis", -1))


def _softmax_cross_entropy(node, scores, labels):
    """Reduction "none" over [N, C] scores, as the form writes it: -log_softmax at the label, 0 at
    ignore_index, in float64 and rounded once."""
    assert _attr(node, "reduction") == b"none" and scores.ndim == 2, "the reference reads the form's case only"
    ignore = _attr(node, "ignore_index")
    x = scores.astype(np.float64)
    m = np.max(x, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", over="ignore"):
        log_prob = x - m - np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))
    loss = np.zeros(len(labels))
    for n, t in enumerate(labels):
        if t != ignore:
            loss[n] = -log_prob[n, int(t)]
    return loss.astype(scores.dtype)


def _arg_extremum(f, node, x):
    axis = _attr(node, "axis", 0)
    if _attr(node, "select_last_index", 0):
        i = x.shape[axis] - 1 - f(np.flip(x, axis), axis=axis)
    else:
        i = f(x, axis=axis)
    i = i.astype(np.int64)
    return np.expand_dims(i, axis) if _attr(node, "keepdims", 1) else i


def _cumsum(x, axis, exclusive, reverse):
    """Running sums accumulated in float64 (exact enough to judge float32 results)."""
    wide = x.astype(np.float64) if x.dtype.kind == "f" else x
    if reverse:
        wide = np.flip(wide, axis)
    y = np.cumsum(wide, axis=axis)
    if exclusive:
        y = np.concatenate([np.zeros_like(np.take(y, [0], axis=axis)), np.take(y, range(y.shape[axis] - 1), axis=axis)],
                           axis=axis)
    if reverse:
        y = np.flip(y, axis)
    return y.astype(x.dtype)


def _auto_pads(node, spatial, kernel, strides, dilations):
    """ONNX's pads [begin..., end...] from auto_pad (VALID, SAME_UPPER) or the pads attribute."""
    auto = _attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    n = len(spatial)
    if auto == "VALID":
        return [0] * (2 * n)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for size, k, s, d in zip(spatial, kernel, strides, dilations):
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            small = total // 2
            begin.append(small if auto == "SAME_UPPER" else total - small)
            end.append(total - begin[-1])
        return begin + end
    return list(_attr(node, "pads", [0] * (2 * n)))


def _windows(x, kernel, strides, dilations, pads, fill):
    """x [N, C, H, W] padded with `fill`; yields (i, j, window [N, C, KH, KW], valid mask [KH, KW])."""
    n, c, h, w = x.shape
    top, left, bottom, right = pads
    padded = np.full((n, c, h + top + bottom, w + left + right), fill, dtype=np.float64)
    padded[:, :, top:top + h, left:left + w] = x
    inside = np.zeros(padded.shape[2:], dtype=bool)
    inside[top:top + h, left:left + w] = True
    span_h, span_w = (kernel[0] - 1) * dilations[0] + 1, (kernel[1] - 1) * dilations[1] + 1
    out_h = (padded.shape[2] - span_h) // strides[0] + 1
    out_w = (padded.shape[3] - span_w) // strides[1] + 1
    for i in range(out_h):
        for j in range(out_w):
            rows = slice(i * strides[0], i * strides[0] + span_h, dilations[0])
            cols = slice(j * strides[1], j * strides[1] + span_w, dilations[1])
            yield i, j, out_h, out_w, padded[:, :, rows, cols], inside[rows, cols]


def _conv(node, x, w):
    """ONNX Conv, NCHW input and OIHW filter, in float64."""
    strides = list(_attr(node, "strides", [1, 1]))
    dilations = list(_attr(node, "dilations", [1, 1]))
    group = _attr(node, "group", 1)
    kernel = list(w.shape[2:])
    pads = _auto_pads(node, x.shape[2:], kernel, strides, dilations)
    out = None
    per_group_in, per_group_out = x.shape[1] // group, w.shape[0] // group
    for i, j, oh, ow, window, _ in _windows(x, kernel, strides, dilations, pads, 0.0):
        if out is None:
            out = np.zeros((x.shape[0], w.shape[0], oh, ow))
        for g in range(group):
            part = window[:, g * per_group_in:(g + 1) * per_group_in]
            filters = w[g * per_group_out:(g + 1) * per_group_out].astype(np.float64)
            out[:, g * per_group_out:(g + 1) * per_group_out, i, j] = np.einsum("nchw,ochw->no", part, filters)
    return out.astype(x.dtype)


def _pool(node, x, is_max):
    kernel = list(_attr(node, "kernel_shape"))
    strides = list(_attr(node, "strides", [1, 1]))
    dilations = list(_attr(node, "dilations", [1, 1]))
    if _attr(node, "ceil_mode", 0):
        raise NotImplementedError("the reference has no ceil_mode")
    pads = _auto_pads(node, x.shape[2:], kernel, strides, dilations)
    include_pad = _attr(node, "count_include_pad", 0)
    out = None
    for i, j, oh, ow, window, inside in _windows(x, kernel, strides, dilations, pads, -np.inf if is_max else 0.0):
        if out is None:
            out = np.zeros(x.shape[:2] + (oh, ow))
        if is_max:
            out[:, :, i, j] = window.max(axis=(2, 3))
        else:
            count = inside.size if include_pad else inside.sum()
            out[:, :, i, j] = window.sum(axis=(2, 3)) / count
    return out.astype(x.dtype)


def _fold(f, ins):
    out = ins[0]
    for x in ins[1:]:
        out = f(out, x)
    return out


def run_nodes(nodes, values, functions):
    """Runs nodes over values (name -> array); a call of a model-local function runs its body."""
    for node in nodes:
        ins = [values[name] for name in node.input]
        if node.domain:
            f = functions[(node.domain, node.op_type)]
            local = dict(zip(f.input, ins))
            run_nodes(f.node, local, functions)
            out = local[f.output[0]]
        elif node.op_type == "Constant":
            out = numpy_helper.to_array(_attr(node, "value"))
        else:
            out = evaluate(node, ins)
        values[node.output[0]] = np.asarray(out)


def run_model(model, inputs):
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for info, x in zip(model.graph.input, inputs):
        values[info.name] = x
    run_nodes(model.graph.node, values, {(f.domain, f.name): f for f in model.functions})
    return [values[o.name] for o in model.graph.output]


def differences(got, want):
    """Where got (the reference) and want (symflow) disagree beyond rounding."""
    if got.shape != want.shape:
        return f"shape {got.shape} vs {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} vs {want.dtype}"
    if got.dtype.kind != "f":
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        rtol = 2e-5 if got.dtype == np.float32 else 1e-12
        scale = max(1.0, float(np.max(np.abs(w[np.isfinite(w)]), initial=0.0)))
        with np.errstate(invalid="ignore"):
            close = np.abs(g - w) <= rtol * np.abs(w) + rtol * 0.05 * scale
        same_special = (np.isnan(g) & np.isnan(w)) | (np.isinf(g) & (g == w))
        bad = ~(close | same_special) | (np.isnan(g) != np.isnan(w))
    if not bad.any():
        return None
    i = tuple(int(k) for k in np.argwhere(bad)[0])
    return f"{int(bad.sum())} of {bad.size} elements differ, first at {i}: reference {got[i]!r}, symflow {want[i]!r}"


def check_case(folder):
    model = onnx.load(str(folder / "model.onnx"))
    onnx.checker.check_model(model, full_check=True)
    inputs = [np.load(folder / f"input_{k}.npy") for k in range(len(model.graph.input))]
    expected = [np.load(folder / f"expected_{k}.npy") for k in range(len(model.graph.output))]
    for k, (got, want) in enumerate(zip(run_model(model, inputs), expected)):
        why = differences(np.asarray(got), want)
        if why:
            return f"output {k}: {why}"
    return None


def main():
    root = pathlib.Path(sys.argv[1])
    failed = 0
    cases = sorted(p for p in root.iterdir() if p.is_dir())
    for folder in cases:
        try:
            why = check_case(folder)
        except Exception as e:  # a checker refusal or an op the reference lacks is a failure too
            why = f"{type(e).__name__}: {e}"
        print(f"{'FAIL' if why else 'ok  '} {folder.name}{': ' + why if why else ''}")
        failed += bool(why)
    print(f"{len(cases) - failed} of {len(cases)} cases agree")
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
