#!/usr/bin/env python3
"""Independent reader for symflow's TensorBoard event files (tests/tensorboard_test.cpp runs it).

Shares no code with the C++ writer: TFRecord framing is parsed here and both masked CRC-32Cs are
checked with crcmod; Events are decoded by python3-protobuf from tests/tensorboard_event.proto
(compiled by protoc at run time); histograms are recomputed with numpy. Every decoded value is
compared with what the C++ test says it logged (a JSON file), and no message may carry a field the
.proto does not declare, so a wrong field number fails instead of being skipped silently.

usage: tensorboard_reader.py --protoc PROTOC --proto FILE.proto --expected EXPECTED.json EVENT_FILE
Exit status 0 when everything matches; otherwise the first mismatch is printed and the status is 1.
"""
import argparse
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

import crcmod.predefined
import numpy as np
from google.protobuf import descriptor_pb2, message_factory

DBL_MAX = sys.float_info.max
crc32c = crcmod.predefined.mkCrcFun("crc-32c")


class Mismatch(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Mismatch(message)


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path):
    with open(path, "rb") as f:
        data = f.read()
    records, offset = [], 0
    while offset < len(data):
        check(len(data) - offset >= 12, f"truncated record header at byte {offset}")
        length_bytes = data[offset:offset + 8]
        (length,) = struct.unpack("<Q", length_bytes)
        (length_crc,) = struct.unpack("<I", data[offset + 8:offset + 12])
        check(length_crc == masked(crc32c(length_bytes)), f"record at byte {offset}: bad masked CRC-32C of the length")
        start = offset + 12
        check(len(data) - start >= length + 4, f"record at byte {offset}: truncated data")
        payload = data[start:start + length]
        (data_crc,) = struct.unpack("<I", data[start + length:start + length + 4])
        check(data_crc == masked(crc32c(payload)), f"record at byte {offset}: bad masked CRC-32C of the data")
        records.append(payload)
        offset = start + length + 4
    return records


def message_classes(protoc, proto):
    with tempfile.TemporaryDirectory() as tmp:
        descriptor_set = os.path.join(tmp, "events.desc")
        subprocess.run([protoc, "-I", os.path.dirname(os.path.abspath(proto)), f"--descriptor_set_out={descriptor_set}",
                        os.path.abspath(proto)], check=True)
        with open(descriptor_set, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    return message_factory.GetMessages(list(files.file))


def assert_no_unknown_fields(message, where):
    check(len(message.UnknownFields()) == 0, f"{where}: fields the .proto does not declare")
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is not None:
                for key, item in value.items():
                    assert_no_unknown_fields(item, f"{where}.{field.name}[{key}]")
        elif field.label == field.LABEL_REPEATED:
            for i, item in enumerate(value):
                assert_no_unknown_fields(item, f"{where}.{field.name}[{i}]")
        else:
            assert_no_unknown_fields(value, f"{where}.{field.name}")


def float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def default_bucket_limits():
    positive, v = [], 1e-12
    while v < 1e20:
        positive.append(v)
        v *= 1.1
    positive.append(DBL_MAX)
    return [-x for x in reversed(positive)] + [0.0] + positive


def expected_buckets(values, uniform_count, mn, mx):
    if uniform_count == 0:
        limits = default_bucket_limits()
        counts = [0.0] * len(limits)
        if len(values):
            index = np.minimum(np.searchsorted(np.array(limits), values, side="right"), len(limits) - 1)
            for k, c in zip(*np.unique(index, return_counts=True)):
                counts[int(k)] = float(c)
        # Runs of empty buckets merge into one whose limit is the run's last.
        out_limits, out_counts, i = [], [], 0
        while i < len(limits):
            if counts[i] == 0:
                while i + 1 < len(limits) and counts[i + 1] == 0:
                    i += 1
            out_limits.append(limits[i])
            out_counts.append(counts[i])
            i += 1
        return out_limits, out_counts, True
    n = uniform_count
    if len(values) == 0:
        return [0.0] * n, [0.0] * n, True
    width = (mx - mn) / n
    counts = [0.0] * n
    if width == 0:
        counts[-1] = float(len(values))
        return [mx] * n, counts, True
    index = np.minimum(np.floor((values - mn) / width), n - 1).astype(np.int64)
    for k in index:
        counts[int(k)] += 1
    limits = [mn + (k + 1) * width for k in range(n - 1)] + [mx]
    return limits, counts, False  # a compiler may contract mn + (k+1)*width into one FMA: compare closely


def check_histogram(histo, expected, where):
    values = np.array(expected["values"], dtype=np.float64)
    if len(values):
        mn, mx = float(values.min()), float(values.max())
        total, squares = math.fsum(values), math.fsum(values * values)
    else:
        mn = mx = total = squares = 0.0
    check(histo.min == mn, f"{where}: min {histo.min!r} != {mn!r}")
    check(histo.max == mx, f"{where}: max {histo.max!r} != {mx!r}")
    check(histo.num == len(values), f"{where}: num {histo.num!r} != {len(values)}")
    if expected["exact_sums"]:
        check(histo.sum == total, f"{where}: sum {histo.sum!r} != {total!r}")
        check(histo.sum_squares == squares, f"{where}: sum_squares {histo.sum_squares!r} != {squares!r}")
    else:
        check(math.isclose(histo.sum, total, rel_tol=1e-12, abs_tol=1e-12), f"{where}: sum {histo.sum!r} vs {total!r}")
        check(math.isclose(histo.sum_squares, squares, rel_tol=1e-12), f"{where}: sum_squares {histo.sum_squares!r} vs {squares!r}")
    limits, counts, limits_exact = expected_buckets(values, expected["uniform_count"], mn, mx)
    got_limits, got_counts = list(histo.bucket_limit), list(histo.bucket)
    check(len(got_limits) == len(limits), f"{where}: {len(got_limits)} bucket limits, expected {len(limits)}")
    check(got_counts == counts, f"{where}: bucket counts {got_counts} != {counts}")
    if limits_exact:
        check(got_limits == limits, f"{where}: bucket limits differ")
    else:
        scale = max(abs(mn), abs(mx), 1.0)
        for k, (a, b) in enumerate(zip(got_limits, limits)):
            check(abs(a - b) <= 1e-12 * scale, f"{where}: bucket limit {k}: {a!r} vs {b!r}")
    check(sum(got_counts) == len(values), f"{where}: bucket counts add up to {sum(got_counts)}, not num")


def check_attribute(value, expected, where):
    kind, want = next(iter(expected.items()))
    check(value.WhichOneof("value") == ("list" if kind == "list_i" else kind), f"{where}: holds {value.WhichOneof('value')}, expected {kind}")
    if kind == "list_i":
        check(list(value.list.i) == want, f"{where}: {list(value.list.i)} != {want}")
    elif kind == "f":
        check(value.f == float32(want), f"{where}: {value.f!r} != {want!r}")
    elif kind == "s":
        check(value.s == want.encode(), f"{where}: {value.s!r} != {want!r}")
    else:
        check(getattr(value, kind) == want, f"{where}: {getattr(value, kind)!r} != {want!r}")


def check_graph(graph_def, expected, where):
    nodes = list(graph_def.node)
    names = [n.name for n in nodes]
    check(len(set(names)) == len(names), f"{where}: node names repeat: {names}")
    check(len(nodes) == len(expected["nodes"]), f"{where}: {len(nodes)} nodes {names}, expected {len(expected['nodes'])}")
    check(graph_def.versions.producer == expected["producer"], f"{where}: versions.producer {graph_def.versions.producer}")
    for node, want in zip(nodes, expected["nodes"]):
        at = f"{where}: node '{node.name}'"
        check(node.name == want["name"], f"{at}: expected name '{want['name']}'")
        check(node.op == want["op"], f"{at}: op '{node.op}', expected '{want['op']}'")
        check(list(node.input) == want["inputs"], f"{at}: inputs {list(node.input)}, expected {want['inputs']}")
        check(all(i in names[:names.index(node.name)] for i in node.input), f"{at}: reads a node not defined before it")
        type_key = "dtype" if want["op"] in ("Placeholder", "Variable", "Const") else "T"
        expected_keys = {type_key, "_output_shapes", *want["attrs"].keys()}
        check(set(node.attr.keys()) == expected_keys, f"{at}: attributes {sorted(node.attr.keys())}, expected {sorted(expected_keys)}")
        check(node.attr[type_key].type == want["dtype"], f"{at}: {type_key} {node.attr[type_key].type}, expected {want['dtype']}")
        shapes = node.attr["_output_shapes"].list.shape
        check(len(shapes) == 1, f"{at}: {len(shapes)} output shapes")
        check(not shapes[0].unknown_rank, f"{at}: unknown_rank set")
        check([d.size for d in shapes[0].dim] == want["shape"], f"{at}: shape {[d.size for d in shapes[0].dim]}, expected {want['shape']}")
        for key, attr in want["attrs"].items():
            check_attribute(node.attr[key], attr, f"{at} attribute '{key}'")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--protoc", required=True)
    parser.add_argument("--proto", required=True)
    parser.add_argument("--expected", required=True)
    parser.add_argument("event_file")
    args = parser.parse_args()
    np.seterr(over="ignore")  # the "extremes" histogram squares DBL_MAX: inf is the right sum_squares
    with open(args.expected) as f:
        expected = json.load(f)
    classes = message_classes(args.protoc, args.proto)
    Event, GraphDef = classes["tensorflow.Event"], classes["tensorflow.GraphDef"]

    try:
        name = os.path.basename(args.event_file)
        match = re.fullmatch(r"events\.out\.tfevents\.(\d{10})\." + re.escape(expected["host"]) + r"(\.\d+)?", name)
        check(match is not None, f"file name '{name}' is not events.out.tfevents.<10-digit seconds>.{expected['host']}")
        seconds = int(match.group(1))
        check(expected["wall_time_min"] - 1 <= seconds <= expected["wall_time_max"] + 1, f"file name time {seconds} outside the run")

        records = read_records(args.event_file)
        check(len(records) == len(expected["events"]), f"{len(records)} records, expected {len(expected['events'])}")
        for index, (record, want) in enumerate(zip(records, expected["events"])):
            where = f"record {index} ({want['kind']} '{want.get('tag', '')}')"
            event = Event.FromString(record)
            assert_no_unknown_fields(event, where)
            check(expected["wall_time_min"] <= event.wall_time <= expected["wall_time_max"], f"{where}: wall_time {event.wall_time} outside the run")
            check(event.step == want["step"], f"{where}: step {event.step}, expected {want['step']}")
            kind = want["kind"]
            if kind == "file_version":
                check(event.WhichOneof("what") == "file_version", f"{where}: holds {event.WhichOneof('what')}")
                check(event.file_version == "brain.Event:2", f"{where}: file_version '{event.file_version}'")
                continue
            if kind == "graph":
                check(event.WhichOneof("what") == "graph_def", f"{where}: holds {event.WhichOneof('what')}")
                graph_def = GraphDef.FromString(event.graph_def)
                assert_no_unknown_fields(graph_def, where)
                check_graph(graph_def, want, where)
                continue
            check(event.WhichOneof("what") == "summary", f"{where}: holds {event.WhichOneof('what')}")
            check(len(event.summary.value) == 1, f"{where}: {len(event.summary.value)} summary values")
            value = event.summary.value[0]
            check(value.tag == want["tag"], f"{where}: tag '{value.tag}'")
            if kind == "scalar":
                check(value.WhichOneof("value") == "simple_value", f"{where}: holds {value.WhichOneof('value')}")
                check(value.simple_value == float32(want["value"]), f"{where}: {value.simple_value!r} != float32({want['value']!r})")
            elif kind == "histogram":
                check(value.WhichOneof("value") == "histo", f"{where}: holds {value.WhichOneof('value')}")
                check_histogram(value.histo, want, where)
            elif kind == "text":
                check(value.WhichOneof("value") == "tensor", f"{where}: holds {value.WhichOneof('value')}")
                check(value.metadata.plugin_data.plugin_name == "text", f"{where}: plugin '{value.metadata.plugin_data.plugin_name}'")
                check(value.tensor.dtype == 7, f"{where}: dtype {value.tensor.dtype}, expected DT_STRING")
                check(value.tensor.HasField("tensor_shape") and len(value.tensor.tensor_shape.dim) == 0, f"{where}: not a scalar tensor")
                check(list(value.tensor.string_val) == [want["value"].encode("utf-8")], f"{where}: text {list(value.tensor.string_val)!r}")
            else:
                raise Mismatch(f"{where}: unknown expected kind {kind}")
    except Mismatch as mismatch:
        print(f"tensorboard_reader: {args.event_file}: {mismatch}", file=sys.stderr)
        return 1
    print(f"tensorboard_reader: {len(records)} records checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
