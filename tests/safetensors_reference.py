#!/usr/bin/env python3
"""An independent safetensors reader and writer for checkpoint_test (json, struct and numpy only).

  read FILE OUT.json        parse FILE, check the layout symflow promises (sorted keys, 8-byte
                            aligned data start, space padding, tensors tiling the data section in
                            name order) and write what it holds to OUT.json
  write FILE OUT.json SEED  write a safetensors file the way another tool might (header keys in
                            reverse order, data in a shuffled order, no padding, every dtype) and
                            the values it holds to OUT.json

OUT.json: {"metadata": {...}, "tensors": {name: {"dtype": "F32", "shape": [...], "values": [...]}}}
with values flattened in C order; floats as the unsigned integers of their bit patterns (exact,
NaN included), integers as integers, BOOL as 0/1.

Exit status 0 on success; 1 with a message on stderr when the file breaks a rule.
"""
import json
import struct
import sys

import numpy as np

# NumPy has no bfloat16: BF16 values are handled as their 16-bit patterns.
DTYPES = {"F32": "<f4", "F64": "<f8", "I32": "<i4", "I64": "<i8", "BOOL": "|b1", "U8": "|u1", "F16": "<f2",
          "BF16": "<u2", "I8": "|i1", "I16": "<i2", "U16": "<u2", "U32": "<u4", "U64": "<u8"}
BITS = {"F32": "<u4", "F64": "<u8", "F16": "<u2", "BF16": "<u2"}


def fail(message):
    print("safetensors_reference: " + message, file=sys.stderr)
    sys.exit(1)


def plain_values(dtype, array):
    flat = array.reshape(-1)
    if dtype in BITS:
        return [int(v) for v in flat.view(BITS[dtype])]
    return [int(v) for v in flat]


def read(path, out_path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        fail("file shorter than 8 bytes")
    (header_len,) = struct.unpack("<Q", data[:8])
    if 8 + header_len > len(data):
        fail("header length past the end of the file")
    if (8 + header_len) % 8 != 0:
        fail("data section does not start at a multiple of 8 bytes")
    header_text = data[8 : 8 + header_len].decode("utf-8")
    if not header_text.startswith("{") or not header_text.rstrip(" ").endswith("}"):
        fail("the header is not one JSON object padded with spaces")
    pairs = json.loads(header_text, object_pairs_hook=lambda kv: kv)
    keys = [k for k, _ in pairs]
    if keys != sorted(keys):
        fail("header keys are not sorted: %r" % keys)
    if len(set(keys)) != len(keys):
        fail("duplicate keys")
    header = dict(pairs)
    body = data[8 + header_len :]
    metadata = dict(header.pop("__metadata__", []))
    tensors = {}
    expected_begin = 0
    for name in sorted(header):
        entry = dict(header[name])
        if sorted(entry) != ["data_offsets", "dtype", "shape"]:
            fail("tensor %r has keys %r" % (name, sorted(entry)))
        dtype, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        if begin != expected_begin:
            fail("tensor %r starts at %d, expected %d (name order, no gaps)" % (name, begin, expected_begin))
        array = np.frombuffer(body[begin:end], dtype=np.dtype(DTYPES[dtype]))
        if array.size != int(np.prod(shape, dtype=np.int64)):
            fail("tensor %r: %d bytes do not hold %s %r" % (name, end - begin, dtype, shape))
        array = array.reshape(shape)
        tensors[name] = {"dtype": dtype, "shape": list(shape), "values": plain_values(dtype, array)}
        expected_begin = end
    if expected_begin != len(body):
        fail("data section has %d bytes, tensors end at %d" % (len(body), expected_begin))
    with open(out_path, "w") as f:
        json.dump({"metadata": metadata, "tensors": tensors}, f)


def write(path, out_path, seed):
    rng = np.random.default_rng(seed)
    arrays = {}
    for dtype in DTYPES:
        for k in range(2):
            rank = int(rng.integers(0, 4))
            shape = [int(x) for x in rng.integers(0, 5, size=rank)]
            count = int(np.prod(shape, dtype=np.int64))
            if dtype == "BF16":  # the upper halves of float32 patterns
                values = (rng.standard_normal(count).astype("<f4").view("<u4") >> 16).astype("<u2")
            elif dtype in BITS:
                values = rng.standard_normal(count).astype(np.dtype(DTYPES[dtype]))
            elif dtype == "BOOL":
                values = rng.integers(0, 2, size=count).astype(bool)
            else:
                info = np.iinfo(np.dtype(DTYPES[dtype]))
                values = rng.integers(info.min, info.max, size=count, endpoint=True, dtype=np.dtype(DTYPES[dtype]))
            arrays["python.%s.%d" % (dtype.lower(), k)] = (dtype, shape, values.reshape(shape))
    order = list(arrays)
    rng.shuffle(order)
    header, body = {}, b""
    for name in order:
        dtype, shape, array = arrays[name]
        raw = array.astype(np.dtype(DTYPES[dtype])).tobytes(order="C")
        header[name] = {"shape": shape, "data_offsets": [len(body), len(body) + len(raw)], "dtype": dtype}
        body += raw
    metadata = {"written by": "safetensors_reference.py", "seed": str(seed)}
    ordered = {"__metadata__": metadata}
    for name in reversed(sorted(header)):
        ordered[name] = header[name]
    text = json.dumps(ordered).encode("utf-8")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)
    tensors = {
        name: {"dtype": dtype, "shape": shape, "values": plain_values(dtype, array)}
        for name, (dtype, shape, array) in arrays.items()
    }
    with open(out_path, "w") as f:
        json.dump({"metadata": metadata, "tensors": tensors}, f)


def main(argv):
    if len(argv) == 4 and argv[1] == "read":
        read(argv[2], argv[3])
    elif len(argv) == 5 and argv[1] == "write":
        write(argv[2], argv[3], int(argv[4]))
    else:
        fail("usage: read FILE OUT.json | write FILE OUT.json SEED")


if __name__ == "__main__":
    main(sys.argv)
