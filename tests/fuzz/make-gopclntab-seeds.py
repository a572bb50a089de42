#!/usr/bin/env python3
"""make-gopclntab-seeds.py: write the seeds of fuzz_gopclntab into
tests/fuzz/seeds/gopclntab/ (committed; rerun only to change them).  The
first byte is fuzz_gopclntab's selector: 0, the rest is a .gopclntab
section; 1, a whole ELF file.  Tables laid out as Go's linker lays them
(and as tests/unit/test_gopclntab.c makes them): each version's header,
three functions, their names."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "gopclntab")
FUNCS = [(0x401000, b"main.main"), (0x401040, b"runtime.goexit"), (0x4010A0, b"a/b.(*T).M")]
END = 0x401100
MAGIC = {12: 0xFFFFFFFB, 116: 0xFFFFFFFA, 118: 0xFFFFFFF0, 120: 0xFFFFFFF1}


def table(version, ptr=8, le=True, text_in_header=True):
    e = "<" if le else ">"
    word = "Q" if ptr == 8 else "I"
    words = {12: 1, 116: 7}.get(version, 8)
    field = 4 if version >= 118 else ptr
    fword = "I" if field == 4 else word
    hdr = 8 + words * ptr
    names = b"".join(n + b"\0" for _, n in FUNCS)
    text = FUNCS[0][0]
    if version == 12:
        functab = hdr
        names_at = hdr + 7 * field + 3 * 16
    else:
        names_at = hdr
        functab = (hdr + len(names) + 7) & ~7
    funcdata = 0 if version == 12 else functab
    fdata = functab + 7 * field
    size = max(names_at + len(names), fdata + 3 * 16)
    b = bytearray(size)
    struct.pack_into(e + "I", b, 0, MAGIC[version])
    b[6], b[7] = 1, ptr
    b[names_at:names_at + len(names)] = names
    off = 0
    for i, (start, name) in enumerate(FUNCS):
        entry = start - text if version >= 118 else start
        at = fdata + 16 * i
        struct.pack_into(e + fword, b, functab + 2 * i * field, entry)
        struct.pack_into(e + fword, b, functab + (2 * i + 1) * field, at - funcdata)
        struct.pack_into(e + ("I" if version >= 118 else word), b, at, entry)
        struct.pack_into(e + "i", b, at + (4 if version >= 118 else ptr), off + (names_at if version == 12 else 0))
        off += len(name) + 1
    struct.pack_into(e + fword, b, functab + 6 * field, END - text if version >= 118 else END)
    struct.pack_into(e + word, b, 8, 3)
    if version == 116:
        struct.pack_into(e + word, b, 8 + 2 * ptr, names_at)
        struct.pack_into(e + word, b, 8 + 6 * ptr, functab)
    elif version >= 118:
        struct.pack_into(e + word, b, 8 + 2 * ptr, text if text_in_header else 0)
        struct.pack_into(e + word, b, 8 + 3 * ptr, names_at)
        struct.pack_into(e + word, b, 8 + 7 * ptr, functab)
    return bytes(b)


def elf64(tab, pie=False):
    """A 64-bit little-endian ELF file: null, .text, the table, .shstrtab."""
    tname = b".data.rel.ro.gopclntab" if pie else b".gopclntab"
    shstr = b"\0.text\0" + tname + b"\0.shstrtab\0"
    at_tab = 64
    at_str = at_tab + len(tab)
    shoff = (at_str + len(shstr) + 7) & ~7
    b = bytearray(shoff + 4 * 64)
    b[0:7] = b"\177ELF\2\1\1"
    struct.pack_into("<HHIQQQIHHHHHH", b, 16, 3 if pie else 2, 62, 1, 0x401000, 0, shoff, 0, 64, 56, 0, 64, 4, 3)
    b[at_tab:at_tab + len(tab)] = tab
    b[at_str:at_str + len(shstr)] = shstr
    def sh(i, name, typ, addr, off, size):
        struct.pack_into("<IIQQQQIIQQ", b, shoff + 64 * i, name, typ, 0, addr, off, size, 0, 0, 1, 0)
    sh(1, 1, 1, 0x401000, 0, 0)
    sh(2, 7, 1, 0x4b0000, at_tab, len(tab))
    sh(3, 7 + len(tname) + 1, 3, 0, at_str, len(shstr))
    return bytes(b)


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {
        "go12-le64": b"\0" + table(12),
        "go12-be32": b"\0" + table(12, 4, False),
        "go116-le64": b"\0" + table(116),
        "go116-be32": b"\0" + table(116, 4, False),
        "go118-le64": b"\0" + table(118),
        "go120-le64": b"\0" + table(120),
        "go120-be32": b"\0" + table(120, 4, False),
        "go120-no-text-start": b"\0" + table(120, text_in_header=False),
        "elf-static": b"\1" + elf64(table(118)),
        "elf-pie": b"\1" + elf64(table(120), pie=True),
    }
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
