#!/usr/bin/env python3
"""Tests of the symflow command-line tool, run by ctest (tools/CMakeLists.txt), one case per call.

Feeds are written and outputs read with NumPy's own .npy code, and results are compared with
NumPy computations of the same models: an implementation independent of symflow's.
Exit status: 0 passed, 1 failed, 77 skipped (no NumPy).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

SKIP = 77


def fail(message):
    print("FAILED: " + message)
    sys.exit(1)


def need_numpy():
    try:
        import numpy
    except ImportError:
        print("skipped: this python3 has no numpy")
        sys.exit(SKIP)
    return numpy


class Tool:
    def __init__(self, path, work):
        self.path = path
        self.work = work

    def run(self, *args, expect=0):
        result = subprocess.run([self.path, *args], capture_output=True, text=True)
        if result.returncode != expect:
            fail("symflow %s: exit %d, expected %d\nstdout: %s\nstderr: %s"
                 % (" ".join(args), result.returncode, expect, result.stdout, result.stderr))
        return result

    def refuses(self, args, reason):
        """Exit 1 with exactly one line 'symflow: ...' on stderr that contains `reason`."""
        result = self.run(*args, expect=1)
        lines = result.stderr.splitlines()
        if len(lines) != 1 or not lines[0].startswith("symflow: ") or reason not in lines[0]:
            fail("symflow %s: expected one line 'symflow: ...%s...' on stderr, got %r"
                 % (" ".join(args), reason, result.stderr))
        if result.stdout:
            fail("symflow %s wrote to stdout while failing: %r" % (" ".join(args), result.stdout))

    def file(self, name):
        return os.path.join(self.work, name)


def case_help(tool, data):
    out = tool.run("--help").stdout
    for word in ("Usage: symflow", "inspect", "dot", "run", "grad", "convert", "export", "import", "ops",
                 "symflow COMMAND --help"):
        if word not in out:
            fail("--help lacks %r" % word)
    for command, words in (("run", ["--feed NAME=PATH", "--out DIR", "symflow run model.sfg --feed x=images.npy"]),
                           ("grad", ["--wrt NAME", "--of OUTPUT", "-o OUT", "symflow grad model.sfg --wrt W"]),
                           ("inspect", ["FILE"]), ("dot", ["dot -Tsvg"]), ("convert", ["IN", "OUT"]),
                           ("export", ["--params CHECKPOINT"]), ("import", ["MODEL"]), ("ops", ["docs/ops.md"])):
        text = tool.run(command, "--help").stdout
        for word in words + ["Examples:", "Usage: symflow " + command]:
            if word not in text:
                fail("'%s --help' lacks %r:\n%s" % (command, word, text))
    tool.refuses([], "no command given")


def case_inspect(tool, data):
    for name in ("dense_v1.json", "dense_v1.sfg"):
        out = tool.run("inspect", os.path.join(data, name)).stdout
        form = "JSON" if name.endswith(".json") else "binary"
        for line in ("(%s, " % form,
                     "graph: 1 input, 2 parameters, 1 constant, 9 nodes, 2 outputs",
                     "parameter elements: 8",
                     "  x: f32[?,3]",
                     "  dense/W: f32[3,2] (value [3,2] embedded)",
                     "  dense/b: f32[2]\n",
                     "  matmul: 1",
                     "  dense: 5 nodes",
                     "  1: node 12 'transpose' (transpose) : f32[2,?]"):
            if line not in out:
                fail("inspect %s lacks %r:\n%s" % (name, line, out))


def case_dot(tool, data):
    out = tool.run("dot", os.path.join(data, "dense_v1.sfg")).stdout
    if not out.startswith("digraph symflow {") or "subgraph cluster_" not in out or 'label="dense"' not in out:
        fail("dot output lacks the graph or the 'dense' cluster:\n" + out)
    if '[label="f32[?,3]"]' not in out or '[label="f32[2,?]"]' not in out:
        fail("dot output lacks the edges' shapes:\n" + out)
    dot = shutil.which("dot")
    if dot:  # Graphviz reads it
        result = subprocess.run([dot, "-Tsvg"], input=out, capture_output=True, text=True)
        if result.returncode != 0:
            fail("Graphviz refused the output: " + result.stderr)


def case_convert(tool, data):
    os.makedirs(tool.work, exist_ok=True)
    src_json, src_sfg = os.path.join(data, "dense_v1.json"), os.path.join(data, "dense_v1.sfg")
    # Each form converts to the other byte for byte (both writers are deterministic).
    tool.run("convert", src_json, tool.file("converted.sfg"))
    tool.run("convert", src_sfg, tool.file("converted.json"))
    tool.run("convert", src_json, tool.file("converted_noext"))  # the other form: binary
    tool.run("convert", tool.file("converted_noext"), tool.file("back.json"))
    with open(src_sfg, "rb") as f:
        sfg = f.read()
    with open(src_json, "rb") as f:
        text = f.read()
    for path, want in (("converted.sfg", sfg), ("converted.json", text), ("converted_noext", sfg), ("back.json", text)):
        with open(tool.file(path), "rb") as f:
            if f.read() != want:
                fail("convert: %s differs from the fixture" % path)


def case_export(tool, data):
    os.makedirs(tool.work, exist_ok=True)
    out = tool.file("dense.onnx")
    result = subprocess.run([tool.path, "export", os.path.join(data, "dense_v1.json"), out], capture_output=True, text=True)
    if result.returncode == 1 and "not available in this build" in result.stderr:
        print("skipped: this symflow was built without libonnx-dev")
        sys.exit(77)
    if result.returncode != 0 or "opset 17" not in result.stdout:
        fail("symflow export: exit %d\nstdout: %s\nstderr: %s" % (result.returncode, result.stdout, result.stderr))
    try:
        import onnx
    except ImportError:
        print("skipped: python3 has no onnx module (Debian: python3-onnx)")
        sys.exit(77)
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    # W's value is embedded in the fixture, b's is not: W an initialiser, b an input beside x.
    inputs = [i.name for i in model.graph.input]
    if inputs != ["x", "b"] or "W" not in [t.name for t in model.graph.initializer]:
        fail("export: inputs %s, initialisers %s" % (inputs, [t.name for t in model.graph.initializer]))
    if model.graph.input[0].type.tensor_type.shape.dim[0].dim_param != "x_dim0":
        fail("export: x's unknown extent is not the symbolic dimension x_dim0")
    # An op without an ONNX form is refused, naming the node.
    pick = tool.file("scatter.json")
    with open(pick, "w") as f:
        f.write('{"format":"symflow.graph","version":1,"inputs":[],"constants":[],"outputs":[2],"parameters":['
                '{"id":0,"name":"x","scope":"","dtype":"f32","shape":[2],"file":"","line":0,"value":{"shape":[2],"values":[2,0]}},'
                '{"id":1,"name":"like","scope":"","dtype":"f32","shape":[4],"file":"","line":0,"value":{"shape":[4],"values":[1,0,0,0]}}],'
                '"nodes":[{"id":2,"op":"scatter","name":"pick","inputs":[0,1],"attrs":{"axis":0,"begin":1,"end":3},"dtype":"f32",'
                '"shape":[4],"file":"","line":0}]}')
    tool.refuses(["export", pick, tool.file("scatter.onnx")], "node 'pick': op 'scatter' has no ONNX form")


def case_import(tool, data):
    """export then import: the imported graph runs and gives the fixture's outputs (NumPy), and
    W, an initialiser, is a parameter again; an ONNX model with ops no one reads is refused naming
    each node."""
    np = need_numpy()
    os.makedirs(tool.work, exist_ok=True)
    onnx_file, back = tool.file("dense.onnx"), tool.file("dense_back.sfg")
    result = subprocess.run([tool.path, "import", os.path.join(data, "missing.onnx"), back], capture_output=True, text=True)
    if result.returncode == 1 and "not available in this build" in result.stderr:
        print("skipped: this symflow was built without libonnx-dev")
        sys.exit(77)
    tool.run("export", os.path.join(data, "dense_v1.json"), onnx_file)
    out = tool.run("import", onnx_file, back).stdout
    if "2 inputs, 1 parameters" not in out:
        fail("import printed:\n" + out)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    xp, bp = write_npy(np, tool.file("x.npy"), x), write_npy(np, tool.file("b.npy"), b)
    out_dir = tool.file("import_out")
    tool.run("run", back, "--feed", "x=" + xp, "--feed", "b=" + bp, "--out", out_dir)
    want = dense_v1_reference(np, x, b, data)
    for k in range(2):
        got = np.load(os.path.join(out_dir, "output_%d.npy" % k))
        if got.shape != want[k].shape or not np.allclose(got, want[k], rtol=1e-5, atol=1e-6):
            fail("imported output_%d.npy differs from NumPy:\n%s\n%s" % (k, got, want[k]))
    try:
        import onnx
        from onnx import helper, TensorProto
    except ImportError:
        return
    v = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])
    g = helper.make_graph([helper.make_node("Atan", ["x"], ["y"], name="first"),
                           helper.make_node("Relu", ["y"], ["z"], name="second"),
                           helper.make_node("Acos", ["x"], ["w"], name="third")], "g", [v("x")], [v("z"), v("w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tool.file("unread.onnx"))
    result = tool.run("import", tool.file("unread.onnx"), tool.file("unread.sfg"), expect=1)
    for word in ("2 nodes cannot be imported", "node 0 'first' (Atan)", "node 2 'third' (Acos)"):
        if word not in result.stderr:
            fail("import of unread ops: %r not in %r" % (word, result.stderr))
    if "second" in result.stderr:
        fail("import named the node that only reads a refused node's output: %r" % result.stderr)


def case_ops(tool, data, reference):
    """`symflow ops` prints a section with a doc string for every op (it exits 1 naming any op
    without one), and docs/ops.md is exactly that output."""
    out = tool.run("ops").stdout
    sections = [s for s in out.split("\n## ")[1:]]
    if not sections:
        fail("symflow ops printed no op sections")
    for section in sections:
        name, _, body = section.partition("\n")
        paragraphs = [p for p in body.split("\n\n") if p.strip()]
        if len(paragraphs) < 3 or "Example" not in paragraphs[-2]:
            fail("symflow ops: the section of %r has no doc paragraph ending with an example" % name)
        if not paragraphs[-1].startswith("ONNX: ") or "onnx.md" not in paragraphs[-1]:
            fail("symflow ops: the section of %r does not end with its ONNX mapping: %r" % (name, paragraphs[-1]))
    for name, line in (("gelu", "a call of the function `symflow.gelu`"), ("conv2d", "read back from `Conv`"),
                       ("dropout", "no ONNX form"), ("exp", "exported as `Exp`; read back from `Exp`")):
        section = out.split("\n## %s\n" % name)[1].split("\n## ")[0]
        if line not in section:
            fail("symflow ops: the ONNX line of %r lacks %r" % (name, line))
    tool.refuses(["ops", "extra"], "ops: The following argument was not expected: extra")
    with open(reference, encoding="utf-8") as f:
        saved = f.read()
    if saved != out:
        import difflib
        diff = "".join(list(difflib.unified_diff(saved.splitlines(True), out.splitlines(True), reference,
                                                 "symflow ops"))[:40])
        fail("%s differs from the output of `symflow ops`; regenerate it with\n"
             "  symflow ops > docs/ops.md\n%s" % (reference, diff))


def write_npy(np, path, array):
    np.save(path, array, allow_pickle=False)
    return path


def dense_v1_reference(np, x, b, data):
    """The fixture's two outputs in NumPy: sum(relu((x W + b) * cast(c)) * 0.5, axis 1) and relu(...)^T."""
    with open(os.path.join(data, "dense_v1.json")) as f:
        g = json.load(f)
    W = np.array(g["parameters"][0]["value"]["values"], dtype=np.float64).reshape(3, 2)
    c = np.array(g["constants"][0]["data"]["values"], dtype=np.float64)
    h = np.maximum((x.astype(np.float64) @ W + b) * c, 0.0)
    return (h * 0.5).sum(axis=1), h.T


def case_run(tool, data):
    np = need_numpy()
    os.makedirs(tool.work, exist_ok=True)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    b = rng.standard_normal(2).astype(np.float32)
    xp, bp = write_npy(np, tool.file("x.npy"), x), write_npy(np, tool.file("b.npy"), b)
    out_dir = tool.file("run_out")
    shutil.rmtree(out_dir, ignore_errors=True)
    for graph in ("dense_v1.json", "dense_v1.sfg"):
        out = tool.run("run", os.path.join(data, graph), "--feed", "x=" + xp, "--feed=b=" + bp, "--out", out_dir).stdout
        if not re.search(r"output 0( '[^']*')?: f32\[5\]", out) or not re.search(r"output 1( '[^']*')?: f32\[2,5\]", out):
            fail("run %s printed:\n%s" % (graph, out))
        want = dense_v1_reference(np, x, b, data)
        for k in range(2):
            got = np.load(os.path.join(out_dir, "output_%d.npy" % k))
            if got.dtype != np.float32 or got.shape != want[k].shape:
                fail("output_%d.npy is %s%s, expected float32%s" % (k, got.dtype, got.shape, want[k].shape))
            if not np.allclose(got, want[k], rtol=1e-5, atol=1e-6):
                fail("output_%d.npy differs from NumPy:\n%s\n%s" % (k, got, want[k]))
    # Without --out: types and scalar values only, nothing written.
    out = tool.run("run", os.path.join(data, "dense_v1.sfg"), "--feed", "x=" + xp, "--feed", "b=" + bp).stdout
    if "->" in out or not re.search(r"output 1( '[^']*')?: f32\[2,5\]", out):
        fail("run without --out printed:\n" + out)
    # NumPy's default dtypes: a float64 x is rounded to the graph's f32, with the same results.
    x64 = write_npy(np, tool.file("x64.npy"), x.astype(np.float64))
    rounded = tool.file("run_out_f64")
    tool.run("run", os.path.join(data, "dense_v1.sfg"), "--feed", "x=" + x64, "--feed", "b=" + bp, "--out", rounded)
    for k in range(2):
        if not np.array_equal(np.load(os.path.join(rounded, "output_%d.npy" % k)), np.load(os.path.join(out_dir, "output_%d.npy" % k))):
            fail("a float64 feed gave other results than the same values in float32 (output %d)" % k)


def case_bad_input(tool, data):
    np = need_numpy()
    os.makedirs(tool.work, exist_ok=True)
    dense_json, dense_sfg = os.path.join(data, "dense_v1.json"), os.path.join(data, "dense_v1.sfg")
    with open(dense_sfg, "rb") as f:
        sfg = f.read()
    with open(dense_json) as f:
        text = f.read()

    def put(name, content):
        with open(tool.file(name), "wb" if isinstance(content, bytes) else "w") as f:
            f.write(content)
        return tool.file(name)

    truncated = put("truncated.sfg", sfg[:40])
    corrupted = put("corrupted.sfg", sfg[:-1] + bytes([sfg[-1] ^ 1]))
    garbage = put("garbage.txt", "hello")
    bad_json = put("bad.json", '{"format": "symflow.graph", "version": ')
    unknown_op = put("unknown_op.json", text.replace('"op":"relu"', '"op":"frobnicate"'))
    x = write_npy(np, tool.file("x.npy"), np.ones((5, 3), np.float32))
    b = write_npy(np, tool.file("b.npy"), np.ones(2, np.float32))
    huge = np.ones((5, 3), np.float64)
    huge[1, 1] = 1e300  # element 4: beyond float32
    huge64 = write_npy(np, tool.file("huge64.npy"), huge)
    ints = write_npy(np, tool.file("ints.npy"), np.ones((5, 3), np.int64))
    x54 = write_npy(np, tool.file("x54.npy"), np.ones((5, 4), np.float32))
    not_npy = put("not.npy", b"\x93NUMPZ garbage")
    fortran = write_npy(np, tool.file("fortran.npy"), np.asfortranarray(np.ones((5, 3), np.float32)))
    missing = tool.file("does_not_exist.sfg")

    cases = [
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["inspect"], "inspect: FILE is required"),
        (["inspect", dense_json, dense_sfg], "inspect: The following argument was not expected: " + dense_sfg),
        (["inspect", "--verbose", dense_json], "inspect: The following argument was not expected: --verbose"),
        (["inspect", missing], "cannot open '%s'" % missing),
        (["inspect", tool.work], "is a directory"),
        (["inspect", garbage], "not a symflow graph file"),
        (["inspect", truncated], truncated + ": "),
        (["inspect", corrupted], "checksum"),
        (["dot", bad_json], bad_json + ": "),
        (["dot", unknown_op], "unknown op 'frobnicate'"),
        (["run", dense_sfg, "--feed", "b=" + b], "run: no --feed for input 'x' (f32[?,3])"),
        (["run", dense_sfg, "--feed", "x=" + x], "run: parameter 'b' (f32[2]) has no value in the file"),
        (["run", dense_sfg, "--feed", "x=" + x, "--feed", "b=" + b, "--feed", "z=" + x],
         "no input or parameter named 'z'"),
        (["run", dense_sfg, "--feed", "x=" + x, "--feed", "x=" + x, "--feed", "b=" + b], "two --feed options for 'x'"),
        (["run", dense_sfg, "--feed", x], "--feed wants NAME=PATH.npy"),
        (["run", dense_sfg, "--feed"], "run: --feed: 1 required NAME=PATH missing"),
        (["run", dense_sfg, "--feed", "x=" + not_npy, "--feed", "b=" + b], "--feed x: npy file '" + not_npy + "': "),
        (["run", dense_sfg, "--feed", "x=" + fortran, "--feed", "b=" + b], "Fortran"),
        (["run", dense_sfg, "--feed", "x=" + missing, "--feed", "b=" + b], "cannot open"),
        (["run", dense_sfg, "--feed", "x=" + huge64, "--feed", "b=" + b],
         "--feed x: element 4 (1e+300"),
        (["run", dense_sfg, "--feed", "x=" + ints, "--feed", "b=" + b],
         "input 'x' is i64[5,3], the graph expects f32[?,3]"),
        (["run", dense_sfg, "--feed", "x=" + x54, "--feed", "b=" + b],
         "input 'x' is f32[5,4], the graph expects f32[?,3]"),
        (["run", dense_sfg, "--feed", "x=" + x, "--feed", "b=" + x], "parameter 'b' is f32[5,3], the graph expects f32[2]"),
        (["run", dense_sfg, "--feed", "x=" + x, "--feed", "b=" + b, "--out", dense_sfg], "dense_v1.sfg"),
        (["convert", dense_json], "convert: OUT is required"),
        (["convert", dense_json, "/nonexistent-dir/out.sfg"], "cannot open '/nonexistent-dir/out.sfg' for writing"),
        (["grad", dense_sfg, "-o", tool.file("g.sfg")], "grad: --wrt is required"),
        (["grad", dense_sfg, "--wrt", "x"], "grad: -o is required"),
        (["grad", dense_sfg, "--wrt", "x", "--of", "7", "-o", tool.file("g.sfg")], "grad: --of 7: the graph has 2 outputs"),
        (["grad", dense_sfg, "--wrt", "x", "--of", "nope", "-o", tool.file("g.sfg")], "grad: --of 'nope': no output"),
        (["grad", dense_sfg, "--wrt", "x", "-o", tool.file("g.sfg")], "the first output must be a floating scalar"),
    ]
    # Issue 14: non-regular files are refused unread (/dev/zero used to be read forever), deep or
    # huge JSON ends in one short line, and no input ends in a signal.
    fifo = tool.file("fifo")
    if os.path.exists(fifo):
        os.remove(fifo)
    os.mkfifo(fifo)
    deep = put("deep.json", '{"format": "symflow.graph", "outputs": ' + "[" * 100000 + "]" * 100000 + "}")
    long_key = put("long_key.json", text.replace('"op":"relu"', '"op":"' + "r" * 100000 + '"'))
    cases += [
        (["inspect", "/dev/zero"], "graph file '/dev/zero': is a character device, not a regular file"),
        (["dot", fifo], "is a FIFO, not a regular file"),
        (["inspect", deep], "nesting deeper than 46 levels"),  # json_structure_guard::max_depth
        (["inspect", long_key], "(100000 bytes)"),
        (["run", dense_sfg, "--feed", "x=/dev/zero", "--feed", "b=" + b], "--feed x: npy file '/dev/zero': is a character device"),
        (["run", dense_sfg, "--feed", "x=" + tool.work, "--feed", "b=" + b], "is a directory, not a regular file"),
    ]
    # Kernels read their operands as the dtypes their rule admits: a matmul of f32 by f64 computed
    # garbage and a concat of f64 and f32 read past the end of the f32 operand, in files like these.
    def two_parameter_graph(name, op, attrs, a, b, out):
        leaf = '{"id":%d,"name":"%s","scope":"","dtype":"%s","shape":%s,"file":"","line":0,"value":{"shape":%s,"values":%s}}'
        graph = {"format": "symflow.graph", "version": 1, "inputs": [], "constants": [], "outputs": [2]}
        text = json.dumps(graph)[:-1]
        text += ', "parameters": [%s, %s]' % (leaf % ((0, "a") + a[:2] + a[1:]), leaf % ((1, "b") + b[:2] + b[1:]))
        text += ', "nodes": [{"id":2,"op":"%s","name":"%s","inputs":[0,1],"attrs":%s,"dtype":"%s","shape":%s,' \
                '"file":"","line":0}]}' % (op, name, attrs, out[0], out[1])
        return put(name + ".json", text)
    mixed_matmul = two_parameter_graph("mm", "matmul", "{}", ("f32", "[2,2]", "[1,2,3,4]"), ("f64", "[2,1]", "[5,6]"),
                                       ("f32", "[2,1]"))
    mixed_concat = two_parameter_graph("cat", "concat", '{"axis":0}', ("f64", "[2]", "[1,2]"), ("f32", "[2]", "[3,4]"),
                                       ("f64", "[4]"))
    cases += [
        (["run", mixed_matmul], "node 2 'mm' (matmul): operands of dtypes (f32, f64) are not accepted"),
        (["run", mixed_concat], "node 2 'cat' (concat): operands of dtypes (f64, f32) are not accepted"),
        (["inspect", mixed_concat], "node 2 'cat' (concat): operands of dtypes (f64, f32) are not accepted"),
    ]
    for args, reason in cases:
        tool.refuses(args, reason)
    for args, _ in cases:
        if len(tool.run(*args, expect=1).stderr) > 1200:
            fail("symflow %s: the message is longer than 1200 bytes" % " ".join(args)[:200])


def model_reference(np, g, x, labels):
    """Loss, logits and the gradients of the loss w.r.t. W1 and W2 of the example model, in float64."""
    p = {q["name"]: np.array(q["value"]["values"], dtype=np.float64).reshape(q["value"]["shape"])
         for q in g["parameters"]}
    x = x.astype(np.float64)
    pre = x @ p["W1"] + p["b1"]
    h = np.maximum(pre, 0.0)
    logits = h @ p["W2"] + p["b2"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    onehot = np.eye(logits.shape[1])[labels]
    loss = -(onehot * log_softmax).sum(axis=1).mean()
    d_logits = (np.exp(log_softmax) - onehot) / x.shape[0]
    dW2 = h.T @ d_logits
    dW1 = x.T @ ((d_logits @ p["W2"].T) * (pre > 0))
    return loss, logits, dW1, dW2


def case_model(tool, data, model):
    np = need_numpy()
    os.makedirs(tool.work, exist_ok=True)
    model_json = tool.file("model.json")
    tool.run("convert", model, model_json)
    with open(model_json) as f:
        g = json.load(f)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((12, 16)).astype(np.float32)
    labels = rng.integers(0, 4, 12).astype(np.int32)
    feeds = ["--feed", "x=" + write_npy(np, tool.file("mx.npy"), x),
             "--feed", "labels=" + write_npy(np, tool.file("mlabels.npy"), labels)]
    loss, logits, dW1, dW2 = model_reference(np, g, x, labels)

    def close(name, got, want, rtol):
        if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max()):
            fail("%s differs from NumPy: max |diff| %g, max |want| %g"
                 % (name, np.abs(got.astype(np.float64) - want).max(), np.abs(want).max()))

    out_dir = tool.file("model_out")
    tool.run("run", model, *feeds, "--out", out_dir)
    close("loss", np.load(os.path.join(out_dir, "output_0.npy")), np.array(loss), 1e-5)
    close("logits", np.load(os.path.join(out_dir, "output_1.npy")), logits, 1e-5)

    # Labels as NumPy writes them by default (int64) are converted to the graph's i32, exactly; a
    # label that does not fit in i32 is refused, naming it.
    labels64 = write_npy(np, tool.file("mlabels64.npy"), labels.astype(np.int64))
    out64 = tool.file("model_out_i64")
    tool.run("run", model, feeds[0], feeds[1], "--feed", "labels=" + labels64, "--out", out64)
    for k in range(2):
        if not np.array_equal(np.load(os.path.join(out64, "output_%d.npy" % k)), np.load(os.path.join(out_dir, "output_%d.npy" % k))):
            fail("int64 labels gave other results than the same labels in int32 (output %d)" % k)
    big = labels.astype(np.int64)
    big[5] = 2**40
    tool.refuses(["run", model, feeds[0], feeds[1], "--feed", "labels=" + write_npy(np, tool.file("big.npy"), big)],
                 "--feed labels: element 5 (1099511627776) does not fit in i32")

    grad_file = tool.file("model_grad.sfg")
    out = tool.run("grad", model, "--wrt", "W1", "--wrt", "W2", "-o", grad_file).stdout
    if "gradient of output 0 with respect to 'W2' : f32[32,4]" not in out:
        fail("grad printed:\n" + out)
    grad_dir = tool.file("model_grad_out")
    tool.run("run", grad_file, *feeds, "--out", grad_dir)
    close("loss (gradient graph)", np.load(os.path.join(grad_dir, "output_0.npy")), np.array(loss), 1e-5)
    close("dW1", np.load(os.path.join(grad_dir, "output_2.npy")), dW1, 1e-4)
    close("dW2", np.load(os.path.join(grad_dir, "output_3.npy")), dW2, 1e-4)
    # --of picks the output by index: output 0 is the loss, as without it; output 1 (the logits) is no scalar.
    if tool.run("grad", model, "--of", "0", "--wrt", "W1", "--wrt", "W2", "-o", tool.file("of0.sfg")).stdout != out.replace(grad_file, tool.file("of0.sfg")):
        fail("grad --of 0 differs from grad without --of")
    tool.refuses(["grad", model, "--of", "1", "--wrt", "W1", "-o", tool.file("g.sfg")], "floating scalar")
    tool.refuses(["grad", model, "--wrt", "nope", "-o", tool.file("g.sfg")], "no input or parameter named 'nope'")
    tool.refuses(["grad", model, "--wrt", "labels", "-o", tool.file("g.sfg")], "'labels' is i32, not a floating dtype")
    # The differentiated graph is an ordinary graph file: JSON too, and inspectable.
    tool.run("grad", model_json, "--wrt", "W1", "-o", tool.file("model_grad.json"))
    if "\n  grad" not in tool.run("inspect", tool.file("model_grad.json")).stdout:
        fail("the gradient graph has no nodes in the grad scope")


def case_portable(tool, data):
    """The tool is built for x86-64-v2 (CMakeLists.txt, SYMFLOW_NATIVE_TOOLS): its machine code
    uses no AVX, AVX2, FMA or AVX-512 instruction (no ymm or zmm register, no vfmadd), so it runs
    on any x86-64-v2 CPU. Then it runs a graph, as a user's first call would."""
    objdump = shutil.which("objdump")
    if objdump is None:
        print("SKIP: no objdump")
        sys.exit(77)
    wide = re.compile(r"%[yz]mm[0-9]|\bvfn?m(add|sub)|\{%k[0-7]\}")
    found = []
    function = ""
    with subprocess.Popen([objdump, "-d", "--no-show-raw-insn", tool.path], stdout=subprocess.PIPE,
                          text=True, errors="replace") as p:
        for line in p.stdout:
            if line.endswith(">:\n"):
                function = line.strip()
            elif wide.search(line):
                if len(found) < 5:
                    found.append(function + "  " + line.strip())
                else:
                    found.append(None)
        p.wait()
        if p.returncode != 0:
            fail("objdump failed on " + tool.path)
    if found:
        fail("%d instructions beyond x86-64-v2 in %s, the first: \n  %s" %
             (len(found), tool.path, "\n  ".join(f for f in found if f)))
    tool.run("ops")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--symflow", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--model")
    parser.add_argument("--reference", help="docs/ops.md, for the case ops")
    parser.add_argument("case")
    a = parser.parse_args()
    work = os.path.join(a.work, a.case)  # one folder per case: ctest may run them in parallel
    tool = Tool(a.symflow, work)
    if a.case == "model":
        case_model(tool, a.data, a.model)
    elif a.case == "ops":
        case_ops(tool, a.data, a.reference)
    else:
        globals()["case_" + a.case](tool, a.data)
    print("passed: " + a.case)


if __name__ == "__main__":
    main()
