#!/usr/bin/env python3
"""make-tar-seeds.py: write the seed archives of fuzz_tar into
tests/fuzz/seeds/tar/ (committed; rerun only to change them).  Small
archives of the shapes the Engine sends and of hostile ones: escapes,
links, devices, long and deep names, sparse and GNU members."""
import io
import os
import subprocess
import tarfile
import tempfile

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "tar")


def member(tf, name, kind=tarfile.REGTYPE, data=b"", link="", mode=0o644, **kw):
    ti = tarfile.TarInfo(name)
    ti.type, ti.linkname, ti.mode, ti.mtime = kind, link, mode, 1700000000
    for k, v in kw.items():
        setattr(ti, k, v)
    if kind == tarfile.REGTYPE:
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    else:
        tf.addfile(ti)


def archive(name, fmt, build):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        build(tf)
        end = tf.offset + 1024  # the members and the end-of-archive marker
    # Without tarfile's record padding after the marker: smaller seeds,
    # same meaning.
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(buf.getvalue()[:end])


def engine_like(tf):
    member(tf, "front/", tarfile.DIRTYPE, mode=0o755)
    member(tf, "front/strace.log", data=b"1 execve(...) = 0\n" * 20)
    member(tf, "front/ph-exit.json", data=b'{"status":0}\n')
    member(tf, "front/sub/", tarfile.DIRTYPE, mode=0o700)
    member(tf, "front/sub/massif.out", data=b"desc: x\ncmd: y\n", mode=0o600)


def hostile(tf):
    member(tf, "front/", tarfile.DIRTYPE)
    member(tf, "/etc/absolute", data=b"x")
    member(tf, "front/../escape", data=b"x")
    member(tf, "front/up", tarfile.SYMTYPE, link="../..")
    member(tf, "front/abs", tarfile.SYMTYPE, link="/etc")
    member(tf, "front/abs/through", data=b"x")
    member(tf, "front/sub/x", tarfile.SYMTYPE, link="..")
    member(tf, "front/sub/y", tarfile.SYMTYPE, link="x/..")
    member(tf, "front/hard", tarfile.LNKTYPE, link="/etc/passwd")
    member(tf, "front/dev", tarfile.CHRTYPE, devmajor=1, devminor=3)
    member(tf, "front/fifo", tarfile.FIFOTYPE)
    member(tf, "front/suid", data=b"#!/bin/sh\n", mode=0o4755)
    member(tf, "front/d/", tarfile.DIRTYPE)
    member(tf, "front/d", data=b"file over a directory")
    member(tf, "front/f", data=b"f")
    member(tf, "front/f/under", data=b"under a file")


def links(tf):
    member(tf, "front/data", data=b"shared")
    member(tf, "front/same", tarfile.LNKTYPE, link="front/data")
    member(tf, "front/self", tarfile.LNKTYPE, link="front/self")
    member(tf, "front/sym", tarfile.SYMTYPE, link="data")
    member(tf, "front/to-sym", tarfile.LNKTYPE, link="front/sym")
    member(tf, "front/a/b/rel", tarfile.SYMTYPE, link="../../data")


def long_names(tf):
    member(tf, "front/" + "n" * 255, data=b"NAME_MAX")
    member(tf, "front/" + "m" * 256, data=b"over NAME_MAX")
    member(tf, "front/" + "/".join(["d" * 100] * 30) + "/f", data=b"deep and long")
    member(tf, "front/caf\u00e9/\u65e5\u672c.txt", data=b"utf-8")


def deep(tf):
    path = "front"
    for _ in range(70):  # past the 64 directory fds the extractor keeps
        path += "/d"
        member(tf, path + "/", tarfile.DIRTYPE)
    member(tf, path + "/f", data=b"bottom")
    member(tf, "front/top", data=b"top")


def zeros(tf):
    member(tf, "front/zeros", data=b"\0" * 20000)
    member(tf, "front/tail", data=b"x" * 100 + b"\0" * 9000)


os.makedirs(OUT, exist_ok=True)
archive("engine-like.tar", tarfile.PAX_FORMAT, engine_like)
archive("hostile.tar", tarfile.PAX_FORMAT, hostile)
archive("links.tar", tarfile.USTAR_FORMAT, links)
archive("long-names-pax.tar", tarfile.PAX_FORMAT, long_names)
archive("long-names-gnu.tar", tarfile.GNU_FORMAT, long_names)
archive("deep.tar", tarfile.USTAR_FORMAT, deep)
archive("zeros.tar", tarfile.GNU_FORMAT, zeros)


def gnu_sparse(name, flags):
    """A sparse file as GNU tar writes it (old GNU or pax 1.0 sparse)."""
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "front"))
        with open(os.path.join(d, "front", "sparse"), "wb") as f:
            f.write(b"head")
            f.seek(1 << 20)
            f.write(b"middle")
            f.truncate(3 << 20)
        subprocess.run(["tar", "-C", d, "--sparse", "--mtime=@1700000000", "--owner=0", "--group=0"]
                       + flags + ["-cf", os.path.join(OUT, name), "front"], check=True)


gnu_sparse("sparse-gnu.tar", ["--format=gnu"])
gnu_sparse("sparse-pax.tar", ["--format=pax", "--sparse-version=1.0"])
