#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_safetensors, fuzz_idx and fuzz_cli_feed (tests/data/fuzz/
{safetensors,idx,cli_feed}/): small valid files of every kind each reader accepts, in the layout
symflow writes them (sorted keys, 8-byte aligned header, tensors in name order), and one bad-* file
per hostile input of issue 14 and of each format's rules. Stdlib only; run by hand after a format
change: fuzz/make_reader_seeds.py tests/data/fuzz. The graph and .npy seeds come from
fuzz_seed_corpus (make_seed_corpus.cpp)."""
import gzip
import json
import os
import struct
import sys


def safetensors(tensors, metadata=None, pad=True):
    """tensors: list of (name, dtype, shape, bytes); returns the file as symflow writes it."""
    header, offset, data = {}, 0, b""
    for name, dtype, shape, raw in sorted(tensors):
        header[name] = {"data_offsets": [offset, offset + len(raw)], "dtype": dtype, "shape": shape}
        offset += len(raw)
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def raw_header(text, data=b""):
    text = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(text)) + text + data


def idx(type_code, dims, payload):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


def npy(descr, shape, payload):
    shape_text = "(" + "".join("%d, " % d for d in shape).rstrip(" ") + ")" if len(shape) != 1 else "(%d,)" % shape[0]
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text.replace(", )", ")"))
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode() + payload


def write(directory, name, content):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(content)


def main(out):
    st = os.path.join(out, "safetensors")
    f32 = struct.pack("<6f", 1, -2, 0.5, float("inf"), float("nan"), -0.0)
    write(st, "every-dtype.safetensors", safetensors([
        ("dense/W", "F32", [2, 3], f32), ("f64", "F64", [2], struct.pack("<2d", 1e300, -1e-300)),
        ("i32", "I32", [3], struct.pack("<3i", -1, 0, 2**31 - 1)), ("i64", "I64", [1], struct.pack("<q", -2**63)),
        ("mask", "BOOL", [2, 2], bytes([1, 0, 0, 1])), ("pixels", "U8", [4], bytes([0, 7, 128, 255])),
        ("scalar", "F32", [], struct.pack("<f", 3.5)), ("empty", "F32", [0, 3], b"")], {"step": "12", "note": "\u00e9t\u00e9"}))
    write(st, "adam-state.safetensors", safetensors([("W", "F32", [2], struct.pack("<2f", 1, 2)),
                                                     ("adam/m/W", "F32", [2], struct.pack("<2f", 0.1, 0.2)),
                                                     ("adam/step", "I64", [], struct.pack("<q", 7))]))
    write(st, "empty.safetensors", safetensors([]))
    write(st, "metadata-only.safetensors", safetensors([], {"format": "pt"}))
    good = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    write(st, "unpadded.safetensors", raw_header(good, bytes(8)))
    write(st, "bad-deep-nesting.safetensors", raw_header('{"a":' + "[" * 2000 + "]" * 2000 + "}"))
    write(st, "bad-deep-metadata.safetensors", raw_header('{"__metadata__":{"k":' + "{" * 500 + "}" * 500 + "}}"))
    write(st, "bad-overlap.safetensors", raw_header('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                                                    '"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', bytes(8)))
    write(st, "bad-gap.safetensors", raw_header('{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', bytes(8)))
    write(st, "bad-trailing.safetensors", raw_header(good, bytes(12)))
    write(st, "bad-size-mismatch.safetensors", raw_header('{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}}', bytes(8)))
    write(st, "bad-shape-overflow.safetensors",
          raw_header('{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}}', bytes(8)))
    write(st, "bad-header-length.safetensors", struct.pack("<Q", 2**63) + b"{}")
    write(st, "bad-duplicate.safetensors", raw_header(good[:-1] + ',"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', bytes(8)))
    write(st, "bad-metadata-value.safetensors", raw_header('{"__metadata__":{"k":[1,2]}}'))
    write(st, "bad-bool.safetensors", raw_header('{"m":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}', bytes([1, 2])))

    ix = os.path.join(out, "idx")
    # The fuzzer's first byte: even = the rest is the file, odd = the rest is gzip-compressed first.
    images = idx(0x08, [2, 3, 3], bytes(range(18)))
    write(ix, "u8-images.idx", b"\x00" + images)
    write(ix, "u8-images-gz.idx", b"\x00" + gzip.compress(images, mtime=0))
    write(ix, "u8-images-to-gz.idx", b"\x01" + images)
    write(ix, "labels.idx", b"\x00" + idx(0x08, [5], bytes([0, 9, 3, 3, 1])))
    write(ix, "i8.idx", b"\x00" + idx(0x09, [3], bytes([0x80, 0, 0x7F])))
    write(ix, "i16.idx", b"\x00" + idx(0x0B, [2, 1], struct.pack(">2h", -32768, 5)))
    write(ix, "i32.idx", b"\x00" + idx(0x0C, [2], struct.pack(">2i", -1, 2**31 - 1)))
    write(ix, "f32.idx", b"\x00" + idx(0x0D, [3], struct.pack(">3f", 1.5, float("nan"), float("-inf"))))
    write(ix, "f64.idx", b"\x01" + idx(0x0E, [2], struct.pack(">2d", 1e308, -0.0)))
    write(ix, "empty.idx", b"\x00" + idx(0x08, [0, 28, 28], b""))
    write(ix, "two-members-gz.idx", b"\x00" + gzip.compress(images[:10], mtime=0) + gzip.compress(images[10:], mtime=0))
    write(ix, "bad-bomb-gz.idx", b"\x00" + gzip.compress(idx(0x08, [100000, 100000], bytes(65536)), mtime=0))
    write(ix, "bad-over-cap.idx", b"\x01" + idx(0x08, [1024, 1025], bytes(64)))
    write(ix, "bad-truncated-gz.idx", b"\x00" + gzip.compress(images, mtime=0)[:-9])
    write(ix, "bad-trailing-gz.idx", b"\x00" + gzip.compress(images + b"\x00", mtime=0))
    write(ix, "bad-junk-after-gz.idx", b"\x00" + gzip.compress(images, mtime=0) + b"junk")
    write(ix, "bad-shortfall.idx", b"\x00" + idx(0x08, [2, 3, 3], bytes(17)))
    write(ix, "bad-huge-extents.idx", b"\x00" + idx(0x0E, [0xFFFFFFFF] * 3, b""))
    write(ix, "bad-magic.idx", b"\x00" + b"\x00\x01\x08\x01" + bytes(8))

    cf = os.path.join(out, "cli_feed")
    write(cf, "x.feed", b"x=x.npy\n" + npy("<f4", [2, 3], struct.pack("<6f", 1, 2, 3, 4, 5, 6)))
    write(cf, "b.feed", b"b=b.npy\n" + npy("<f4", [2], struct.pack("<2f", 1, 2)))
    write(cf, "x-wrong-dtype.feed", b"x=dir/x=1.npy\n" + npy("<f8", [5, 3], bytes(120)))
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "graph", "arange_2x3_i4.npy"), "rb") as f:
        write(cf, "fixture.feed", b"x=arange_2x3_i4.npy\n" + f.read())
    write(cf, "bad-no-equals.feed", b"x.npy\n" + npy("<f4", [1], bytes(4)))
    write(cf, "bad-unknown-name.feed", b"z=z.npy\n" + npy("<f4", [1], bytes(4)))
    write(cf, "bad-npy.feed", b"x=x.npy\n\x93NUMPZ")
    write(cf, "bad-empty-path.feed", b"x=\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "fuzz"))
