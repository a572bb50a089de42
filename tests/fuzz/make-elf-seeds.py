#!/usr/bin/env python3
"""make-elf-seeds.py: write the seeds of fuzz_elf into tests/fuzz/seeds/elf/
(committed; rerun only to change them).  The first byte is fuzz_elf's
selector (see its header): bit 0 clear, the rest is a program's first bytes;
set, the rest is a note segment (bit 1: 64-bit, bit 2: little-endian, bit 3:
8-aligned notes).  ELF headers made as tests/unit/test_image.c makes them."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "elf")


def note(name, ntype, desc, align=4, le=True, pad_desc=True):
    e = "<" if le else ">"
    n = name + b"\0"
    pad = lambda b: b + b"\0" * (-len(b) % align)
    return struct.pack(e + "III", len(n), len(desc), ntype) + pad(n) + (pad(desc) if pad_desc else desc)


def head(types, notes=b"", is64=True, le=True, etype=2):
    """An ELF header, program headers of TYPES (a PT_NOTE among them covers
    NOTES, put after the headers), then NOTES."""
    e = "<" if le else ">"
    eh, ph = (64, 56) if is64 else (52, 32)
    at = eh + ph * len(types)
    b = bytearray(eh + ph * len(types))
    b[0:7] = b"\177ELF" + bytes([2 if is64 else 1, 1 if le else 2, 1])
    struct.pack_into(e + "H", b, 16, etype)
    if is64:
        struct.pack_into(e + "Q", b, 32, eh)
        struct.pack_into(e + "HH", b, 54, ph, len(types))
    else:
        struct.pack_into(e + "I", b, 28, eh)
        struct.pack_into(e + "HH", b, 42, ph, len(types))
    for i, t in enumerate(types):
        p = eh + i * ph
        struct.pack_into(e + "I", b, p, t)
        if t == 4:
            if is64:
                struct.pack_into(e + "QQQ", b, p + 8, at, at, 0)
                struct.pack_into(e + "QQQ", b, p + 32, len(notes), len(notes), 4)
            else:
                struct.pack_into(e + "IIII", b, p + 4, at, at, 0, len(notes))
                struct.pack_into(e + "III", b, p + 20, len(notes), 0, 4)
    return bytes(b) + notes


BUILD_ID = bytes(range(20))
SEEDS = {
    # the segment that made the walk step past its end: its last note's
    # description not padded to the segment's end
    "notes-unpadded-last": b"\x07" + note(b"GNU", 1, bytes(16)) + note(b"Go", 4, b"abcde", pad_desc=False),
    "notes-build-id": b"\x07" + note(b"GNU", 3, BUILD_ID),
    "notes-go-then-build-id": b"\x07" + note(b"Go", 4, bytes(20)) + note(b"GNU", 3, BUILD_ID),
    "notes-8-aligned": b"\x0f" + note(b"GNU", 1, bytes(20), 8) + note(b"GNU", 3, BUILD_ID, 8),
    "notes-32-big-endian": b"\x01" + note(b"GNU", 3, BUILD_ID, le=False),
    "notes-huge-sizes": b"\x07" + struct.pack("<III", 0xFFFFFFF0, 0xFFFFFFFF, 3) + b"GNU\0",
    "head-dynamic": b"\x00" + head([6, 3, 1, 1, 2, 4], note(b"GNU", 3, BUILD_ID)),
    "head-static-go": b"\x00" + head([1, 1, 4], note(b"Go", 4, bytes(20))),
    "head-static-pie-32": b"\x00" + head([6, 1, 2], is64=False, etype=3),
    "head-big-endian": b"\x00" + head([6, 3, 1, 4], note(b"GNU", 3, BUILD_ID, le=False), le=False),
    "not-elf": b"\x00#!/bin/sh\nexec app\n",
}

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
