#!/usr/bin/env python3
"""The documentation figures' Python half (scripts/figures.sh runs it; see docs/tutorial.md).

Commands:
  scalars EVENT_FILE                   print every scalar of a TensorBoard event file (tag step value)
  graph EVENT_FILE OUT.json [EXPORT.json]
                                       the graph the file records (the training loss of the example that
                                       wrote it), as a symflow graph file in the JSON form; EXPORT.json,
                                       the example's --export model.json, names the leaves and is checked
                                       to be part of it
  dead GRAPH.json                      fail when a node of the graph feeds no output (a gradient
                                       graph from `symflow grad` has none)
  curves OUT.svg CAPTION RUN...        loss and accuracy curves; RUN is LABEL=EVENT_FILE
  benchmarks DATA.csv OUT.svg          the benchmark ratios chart

The event files are read here without TensorFlow or protobuf libraries: TFRecord framing (uint64
length, masked CRC-32C of the length, the data, masked CRC-32C of the data; both CRCs checked) and
the protobuf wire format, decoded by field number as include/symflow/debug/tensorboard/ writes it:
  Event:   1 wall_time (double), 2 step (int64), 3 file_version (string), 4 graph_def (bytes),
           5 summary (Summary)
  Summary: 1 value (repeated Value); Value: 1 tag (string), 2 simple_value (float), 5 histo,
           8 tensor, 9 metadata
  GraphDef: 1 node (repeated NodeDef), 4 versions; NodeDef: 1 name, 2 op, 3 input (repeated),
           5 attr (map<string, AttrValue>: 1 key, 2 value); AttrValue: 1 list (ListValue: 3 packed
           int64s), 2 s, 3 i, 4 f (float), 5 b, 6 type (DataType), 7 shape (TensorShapeProto: 2 dim
           {1 size})
Anything malformed (a bad CRC, a truncated record or field, a wire type the message does not use,
an unknown field) raises an error naming the file and the byte offset.
"""
import csv
import json
import math
import os
import struct
import sys


class FormatError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# TFRecord framing and CRC-32C (Castagnoli, reflected polynomial 0x82F63B78)

def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC32C_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


def read_records(path):
    """The data of every record, with its byte offset; FormatError on any framing defect."""
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        raise FormatError(f"{path}: empty file")
    records, offset = [], 0
    while offset < len(data):
        if len(data) - offset < 12:
            raise FormatError(f"{path}: truncated record header at byte {offset}")
        length_bytes = data[offset:offset + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack("<I", data[offset + 8:offset + 12])
        if length_crc != masked_crc32c(length_bytes):
            raise FormatError(f"{path}: record at byte {offset}: bad masked CRC-32C of the length")
        start = offset + 12
        if len(data) - start < length + 4:
            raise FormatError(f"{path}: record at byte {offset}: {length} bytes of data announced, "
                              f"{len(data) - start} left in the file")
        payload = data[start:start + length]
        (data_crc,) = struct.unpack("<I", data[start + length:start + length + 4])
        if data_crc != masked_crc32c(payload):
            raise FormatError(f"{path}: record at byte {offset}: bad masked CRC-32C of the data")
        records.append((offset, payload))
        offset = start + length + 4
    return records


# ---------------------------------------------------------------------------------------------
# Protobuf wire format

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


def _varint(data, pos, where):
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise FormatError(f"{where}: truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise FormatError(f"{where}: varint longer than 10 bytes")


def fields(data, where, schema):
    """(field number, value) pairs of one message. `schema` maps each field number the message may
    carry to its wire type; a field not in it, or of another wire type, is an error."""
    out, pos = [], 0
    while pos < len(data):
        key, pos = _varint(data, pos, where)
        number, wire = key >> 3, key & 7
        if number not in schema:
            raise FormatError(f"{where}: unexpected field {number} (wire type {wire})")
        if wire != schema[number]:
            raise FormatError(f"{where}: field {number} has wire type {wire}, expected {schema[number]}")
        if wire == VARINT:
            value, pos = _varint(data, pos, where)
        elif wire == FIXED64:
            if pos + 8 > len(data):
                raise FormatError(f"{where}: truncated 64-bit field {number}")
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == FIXED32:
            if pos + 4 > len(data):
                raise FormatError(f"{where}: truncated 32-bit field {number}")
            value, pos = data[pos:pos + 4], pos + 4
        elif wire == BYTES:
            length, pos = _varint(data, pos, where)
            if pos + length > len(data):
                raise FormatError(f"{where}: field {number}: {length} bytes announced, {len(data) - pos} left")
            value, pos = data[pos:pos + length], pos + length
        else:
            raise FormatError(f"{where}: wire type {wire}")
        out.append((number, value))
    return out


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


EVENT = {1: FIXED64, 2: VARINT, 3: BYTES, 4: BYTES, 5: BYTES}
SUMMARY = {1: BYTES}
VALUE = {1: BYTES, 2: FIXED32, 5: BYTES, 8: BYTES, 9: BYTES}


def events(path):
    """Every Event of the file as a dict: wall_time, step, and file_version, graph_def or summary."""
    out = []
    for offset, payload in read_records(path):
        where = f"{path}: event at byte {offset}"
        event = {"wall_time": None, "step": 0}
        for number, value in fields(payload, where, EVENT):
            if number == 1:
                (event["wall_time"],) = struct.unpack("<d", value)
            elif number == 2:
                event["step"] = signed64(value)
            elif number == 3:
                event["file_version"] = value.decode("utf-8")
            elif number == 4:
                event["graph_def"] = value
            elif number == 5:
                event["summary"] = value
        if event["wall_time"] is None:
            raise FormatError(f"{where}: no wall_time")
        out.append(event)
    if not out or out[0].get("file_version") != "brain.Event:2":
        raise FormatError(f"{path}: the first event is not file_version 'brain.Event:2'")
    return out


def scalars(path):
    """{tag: [(step, value), ...]} of every simple_value in the file, in file order."""
    series = {}
    for event in events(path):
        if "summary" not in event:
            continue
        where = f"{path}: summary at step {event['step']}"
        for _, value in fields(event["summary"], where, SUMMARY):
            tag, simple = None, None
            for number, v in fields(value, where, VALUE):
                if number == 1:
                    tag = v.decode("utf-8")
                elif number == 2:
                    (simple,) = struct.unpack("<f", v)
            if tag is None:
                raise FormatError(f"{where}: a value without a tag")
            if simple is not None:
                series.setdefault(tag, []).append((event["step"], simple))
    return series


# ---------------------------------------------------------------------------------------------
# The GraphDef an example logs (its training loss, to_graph(loss)) back as a symflow graph file

NODE_DEF = {1: BYTES, 2: BYTES, 3: BYTES, 5: BYTES}
GRAPH_DEF = {1: BYTES, 4: BYTES}
ATTR_ENTRY = {1: BYTES, 2: BYTES}
ATTR_VALUE = {1: BYTES, 2: BYTES, 3: VARINT, 4: FIXED32, 5: VARINT, 6: VARINT, 7: BYTES}
LIST_VALUE = {3: BYTES, 7: BYTES}
SHAPE = {2: BYTES}
DIM = {1: VARINT}
# TensorFlow DataType -> symflow dtype (the `tensorflow` column of include/symflow/core/dtype.hpp)
TF_DTYPES = {1: "f32", 2: "f64", 3: "i32", 9: "i64", 10: "bool", 19: "f16", 14: "bf16", 6: "i8", 4: "u8",
             5: "i16", 17: "u16", 22: "u32", 23: "u64"}


def _packed_int64s(data, where):
    out, pos = [], 0
    while pos < len(data):
        v, pos = _varint(data, pos, where)
        out.append(signed64(v))
    return out


def _shape(data, where):
    dims = []
    for _, dim in fields(data, where, SHAPE):
        size = 0
        for _, v in fields(dim, where, DIM):
            size = signed64(v)
        dims.append(size)
    return dims


def _attr_value(data, where):
    """('list', [ints]) | ('s', str) | ('i', int) | ('f', float) | ('b', bool) | ('type', code) | ('shapes', [...])"""
    items = fields(data, where, ATTR_VALUE)
    if len(items) != 1:
        raise FormatError(f"{where}: an AttrValue with {len(items)} fields")
    number, v = items[0]
    if number == 1:
        ints, shapes = [], []
        for n, item in fields(v, where, LIST_VALUE):
            if n == 3:
                ints += _packed_int64s(item, where)
            else:
                shapes.append(_shape(item, where))
        return ("shapes", shapes) if shapes else ("list", ints)
    if number == 2:
        return ("s", v.decode("utf-8"))
    if number == 3:
        return ("i", signed64(v))
    if number == 4:
        (f,) = struct.unpack("<f", v)
        # AttrValue.f is a float: write the shortest decimal that reads back as that float
        for digits in range(1, 10):
            text = f"{f:.{digits}g}"
            if struct.unpack("<f", struct.pack("<f", float(text)))[0] == f:
                return ("f", float(text))
        return ("f", f)
    if number == 5:
        return ("b", bool(v))
    if number == 6:
        return ("type", v)
    raise FormatError(f"{where}: AttrValue field {number}")


def graph_def_nodes(path):
    graph_defs = [e["graph_def"] for e in events(path) if "graph_def" in e]
    if len(graph_defs) != 1:
        raise FormatError(f"{path}: {len(graph_defs)} graph events, expected one")
    nodes = []
    for number, node in fields(graph_defs[0], f"{path}: GraphDef", GRAPH_DEF):
        if number != 1:
            continue
        where = f"{path}: GraphDef node {len(nodes)}"
        n = {"name": None, "op": None, "inputs": [], "attrs": {}}
        for k, v in fields(node, where, NODE_DEF):
            if k == 1:
                n["name"] = v.decode("utf-8")
            elif k == 2:
                n["op"] = v.decode("utf-8")
            elif k == 3:
                n["inputs"].append(v.decode("utf-8"))
            else:
                key, value = None, None
                for kk, vv in fields(v, where, ATTR_ENTRY):
                    if kk == 1:
                        key = vv.decode("utf-8")
                    else:
                        value = _attr_value(vv, f"{where}, attribute")
                if key is None or value is None:
                    raise FormatError(f"{where}: an attribute without key or value")
                n["attrs"][key] = value
        if n["name"] is None or n["op"] is None:
            raise FormatError(f"{where}: no name or op")
        nodes.append(n)
    return nodes


def graph_from_event_file(path, leaves_from=None):
    """The symflow graph (JSON form, as a dict) that the file's GraphDef was made from. The GraphDef
    has no source locations (written as unknown), no constant data and no outputs: a graph logged
    with constants is refused, and the one output is the node no other node reads. A leaf's GraphDef
    name is its scope and name joined by '/', and names may hold '/' themselves: the leaves of the
    graph file `leaves_from` (the example's --export model.json) say how each splits; any other leaf
    is taken as a name without a scope."""
    nodes = graph_def_nodes(path)
    known = {}
    if leaves_from:
        with open(leaves_from) as f:
            exported = json.load(f)
        for leaf in exported["inputs"] + exported["parameters"]:
            known[leaf["scope"] + "/" + leaf["name"] if leaf["scope"] else leaf["name"]] = (leaf["scope"], leaf["name"])
    ids, leaves = {}, {"Placeholder": [], "Variable": []}
    graph = {"format": "symflow.graph", "version": 1, "inputs": [], "parameters": [], "constants": [],
             "nodes": [], "outputs": []}

    def type_of(n, key):
        if key not in n["attrs"] or n["attrs"][key][0] != "type":
            raise FormatError(f"{path}: node '{n['name']}' has no {key} attribute")
        code = n["attrs"][key][1]
        if code not in TF_DTYPES:
            raise FormatError(f"{path}: node '{n['name']}': TensorFlow DataType {code}")
        kind, shapes = n["attrs"].get("_output_shapes", (None, None))
        if kind != "shapes" or len(shapes) != 1:
            raise FormatError(f"{path}: node '{n['name']}' has no single _output_shapes")
        return TF_DTYPES[code], shapes[0]

    # Leaves come first, inputs then parameters (then constants, then nodes): the ids follow from it.
    order = {"Placeholder": 0, "Variable": 1, "Const": 2}
    last = -1
    for n in nodes:
        rank = order.get(n["op"], 3)
        if rank < last:
            raise FormatError(f"{path}: node '{n['name']}' ({n['op']}) after a later kind of value")
        last = rank
        if n["op"] == "Const":
            raise FormatError(f"{path}: the graph has constants, whose data a GraphDef does not carry")
    next_id = 0
    for n in nodes:
        if n["name"] in ids:
            raise FormatError(f"{path}: node name '{n['name']}' twice")
        if n["op"] in ("Placeholder", "Variable"):
            dt, shape = type_of(n, "dtype")
            scope, name = known.get(n["name"], ("", n["name"]))
            entry = {"id": next_id, "name": name, "scope": scope, "dtype": dt, "shape": shape, "file": "", "line": 0}
            graph["inputs" if n["op"] == "Placeholder" else "parameters"].append(entry)
        else:
            dt, shape = type_of(n, "T")
            attrs = {}
            for key, (kind, value) in sorted(n["attrs"].items()):
                if key in ("T", "_output_shapes"):
                    continue
                if kind in ("type", "shapes"):
                    raise FormatError(f"{path}: node '{n['name']}': attribute {key} of kind {kind}")
                attrs[key] = value
            inputs = []
            for name in n["inputs"]:
                if name not in ids:
                    raise FormatError(f"{path}: node '{n['name']}' reads '{name}', not defined before it")
                inputs.append(ids[name])
            # GraphDef names are made unique with TensorFlow's "_1" suffixes; symflow's scoped names
            # repeat, and only their scope part matters to drawings and reports.
            scoped = n["name"]
            stem, sep, suffix = scoped.rpartition("_")
            if sep and suffix.isdigit() and stem.rpartition("/")[2] == n["op"]:
                scoped = stem
            graph["nodes"].append({"id": next_id, "op": n["op"], "name": scoped, "inputs": inputs, "attrs": attrs,
                                   "dtype": dt, "shape": shape, "file": "", "line": 0})
        ids[n["name"]] = next_id
        next_id += 1
    read = {i for node in graph["nodes"] for i in node["inputs"]}
    sinks = [node["id"] for node in graph["nodes"] if node["id"] not in read]
    if len(sinks) != 1:
        raise FormatError(f"{path}: {len(sinks)} nodes feed no other node, expected one (the loss)")
    graph["outputs"] = sinks
    return graph


def check_against_export(graph, exported_path):
    """Every node of the exported inference graph (the example's --export model.json, written by
    to_graph) must be in the training graph, in the same order, with the same op, name, type and
    attributes: a check that the GraphDef was read back as what the example built."""
    with open(exported_path) as f:
        exported = json.load(f)
    remaining = iter(graph["nodes"])
    for e in exported["nodes"]:
        for n in remaining:
            if (n["op"], n["name"], n["dtype"], n["shape"], n["attrs"]) == (e["op"], e["name"], e["dtype"], e["shape"], e["attrs"]):
                break
        else:
            raise FormatError(f"{exported_path}: node {e['id']} '{e['name']}' ({e['op']}) is not in the training graph")


def write_graph_json(graph, out):
    """In the JSON form's own layout (docs/graph.md): one entry per line, keys in a fixed order."""
    def line(entry):
        return json.dumps(entry, separators=(",", ":"))
    parts = ['{', '  "format": "symflow.graph",', '  "version": 1,']
    for key in ("inputs", "parameters", "constants", "nodes"):
        entries = graph[key]
        if not entries:
            parts.append(f'  "{key}": [],')
            continue
        parts.append(f'  "{key}": [')
        parts.append(",\n".join("    " + line(e) for e in entries))
        parts.append("  ],")
    parts.append(f'  "outputs": {line(graph["outputs"])}')
    parts.append("}")
    with open(out, "w") as f:
        f.write("\n".join(parts) + "\n")


def dead_nodes(path):
    """Nodes of a graph file in the JSON form from which no output can be reached."""
    with open(path) as f:
        g = json.load(f)
    first = len(g["inputs"]) + len(g["parameters"]) + len(g["constants"])
    live, stack = set(), list(g["outputs"])
    while stack:
        v = stack.pop()
        if v in live:
            continue
        live.add(v)
        if v >= first:
            stack += g["nodes"][v - first]["inputs"]
    return [n for n in g["nodes"] if n["id"] not in live]


# ---------------------------------------------------------------------------------------------
# Plots

def _pyplot():
    import matplotlib
    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
                         "svg.hashsalt": "symflow", "figure.dpi": 100})
    return plt


def _save(fig, out):
    # No date in the metadata: the same data give the same file.
    fig.savefig(out, format=out.rsplit(".", 1)[1], bbox_inches="tight", metadata={"Date": None})


def curves(out, caption, runs):
    """One row per run: loss (batch and epoch means) on the left, accuracy (train, test) on the right."""
    plt = _pyplot()
    fig, axes = plt.subplots(len(runs), 2, figsize=(9, 2.7 * len(runs)), squeeze=False)
    for row, (label, path) in enumerate(runs):
        s = scalars(path)
        for tag in ("batch/loss", "epoch/train_loss", "epoch/train_accuracy", "epoch/test_accuracy"):
            if not s.get(tag):
                raise FormatError(f"{path}: no '{tag}' scalars")
        loss_ax, acc_ax = axes[row]
        for tag, style, name in (("batch/loss", dict(lw=0.8, alpha=0.6), "batch loss"),
                                 ("epoch/train_loss", dict(marker="o", lw=1.5), "epoch mean (train)")):
            steps, values = zip(*s[tag])
            loss_ax.plot(steps, values, label=name, **style)
        loss_ax.set_title(f"{label}: cross-entropy loss")
        loss_ax.set_xlabel("optimiser step")
        loss_ax.legend(loc="upper right")
        for tag, style, name in (("batch/accuracy", dict(lw=0.8, alpha=0.5), "batch (train)"),
                                 ("epoch/train_accuracy", dict(marker="o", lw=1.5), "epoch (train)"),
                                 ("epoch/test_accuracy", dict(marker="s", lw=1.5), "test set")):
            if not s.get(tag):
                continue
            steps, values = zip(*s[tag])
            acc_ax.plot(steps, values, label=name, **style)
        for ax in (loss_ax, acc_ax):  # epoch ends
            for step, _ in s["epoch/train_loss"]:
                ax.axvline(step, color="grey", lw=0.5, ls=":")
        final = s["epoch/test_accuracy"][-1][1]
        acc_ax.set_title(f"{label}: accuracy (final test {final:.4f})")
        acc_ax.set_xlabel("optimiser step")
        acc_ax.legend(loc="lower right")
    fig.suptitle(caption, fontsize=9, y=0.0, va="top")
    fig.tight_layout()
    _save(fig, out)


def lm_curves(out, caption, path):
    """The character model's training loss in bits per character and its held-out bpc."""
    plt = _pyplot()
    s = scalars(path)
    fig, ax = plt.subplots(figsize=(6, 3))
    plotted = 0
    for tag, values in sorted(s.items()):
        if "loss" in tag or "bpc" in tag:
            steps, v = zip(*values)
            ax.plot(steps, v, label=tag, marker="o" if len(v) < 30 else None, lw=1.2)
            plotted += 1
    if not plotted:
        raise FormatError(f"{path}: no loss or bpc scalars")
    ax.set_xlabel("optimiser step")
    ax.legend()
    fig.suptitle(caption, fontsize=9, y=0.0, va="top")
    fig.tight_layout()
    _save(fig, out)


KINDS = {"hand": ("hand-written code", "#4c72b0"), "eigen": ("Eigen", "#55a868"),
         "pytorch": ("PyTorch", "#dd8452"), "jax": ("JAX", "#8172b3")}


def benchmarks(data, out):
    """A horizontal bar per row of DATA.csv, grouped by the section of docs/benchmarks.md it comes
    from: symflow's time divided by the reference's (below 1: symflow is faster)."""
    with open(data, newline="") as f:
        rows = list(csv.DictReader(f))
    needed = ["section", "workload", "reference", "kind", "ratio", "machine", "date"]
    if not rows or list(rows[0]) != needed:
        raise FormatError(f"{data}: expected the columns {','.join(needed)}")
    for i, r in enumerate(rows):
        try:
            r["text"], r["ratio"] = r["ratio"], float(r["ratio"])
        except ValueError:
            raise FormatError(f"{data}: line {i + 2}: ratio {r['ratio']!r} is not a number")
        if not r["ratio"] > 0 or r["kind"] not in KINDS or not all(r[k] for k in needed):
            raise FormatError(f"{data}: line {i + 2}: an empty field, a ratio that is not positive or an unknown kind")
    plt = _pyplot()
    from matplotlib.ticker import FuncFormatter
    # Top to bottom: a heading line per section, machine and date, then its bars.
    lines = []
    for r in rows:
        group = (r["section"], r["machine"], r["date"])
        if not lines or lines[-1][2] != group:
            lines.append(("heading", r, group))
        lines.append(("bar", r, group))
    fig, ax = plt.subplots(figsize=(9, 0.21 * len(lines) + 1.2))
    ticks, labels, n = [], [], len(lines)
    for i, (what, r, _) in enumerate(lines):
        y = n - 1 - i
        if what == "heading":
            ax.text(0.011, y - 0.1, f"{r['section']}: {r['machine']}, {r['date']}", ha="left", va="center",
                    fontsize=7.5, fontweight="bold", bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
            continue
        name, colour = KINDS[r["kind"]]
        ax.barh(y, r["ratio"], color=colour, height=0.72, label=name)
        ax.text(r["ratio"] * 1.04, y, r["text"], va="center", fontsize=7)
        ticks.append(y)
        labels.append(f"{r['workload']} vs {r['reference']}")
    ax.set_yticks(ticks, labels, fontsize=7)
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_xscale("log")
    ax.set_xlim(0.01, 10)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_xlabel("symflow's time / the reference's time (log scale; below 1: symflow is faster)")
    ax.grid(axis="y", visible=False)
    handles, names = ax.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    ax.legend(unique.values(), unique.keys(), loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=len(unique),
              fontsize=7.5, frameon=False, title="symflow against", title_fontsize=7.5, alignment="left")
    fig.tight_layout()
    _save(fig, out)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    command, args = argv[1], argv[2:]
    try:
        if command == "scalars" and len(args) == 1:
            for tag, values in sorted(scalars(args[0]).items()):
                for step, value in values:
                    print(tag, step, repr(value))
        elif command == "graph" and len(args) in (2, 3):
            graph = graph_from_event_file(args[0], args[2] if len(args) == 3 else None)
            if len(args) == 3:
                check_against_export(graph, args[2])
            write_graph_json(graph, args[1])
        elif command == "dead" and len(args) == 1:
            dead = dead_nodes(args[0])
            if dead:
                raise FormatError(f"{args[0]}: {len(dead)} nodes feed no output: " +
                                  ", ".join(f"{n['id']} '{n['name']}' ({n['op']})" for n in dead[:10]))
        elif command == "curves" and len(args) >= 3:
            curves(args[0], args[1], [tuple(run.split("=", 1)) for run in args[2:]])
        elif command == "lm-curves" and len(args) == 3:
            lm_curves(args[0], args[1], args[2])
        elif command == "benchmarks" and len(args) == 2:
            benchmarks(args[0], args[1])
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except (FormatError, OSError, UnicodeDecodeError) as e:
        print(f"figures.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
