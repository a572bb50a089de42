#!/bin/sh
# assemble.sh DEST PROGRAM...: a tools tree that runs in any Linux image.
#
# Each PROGRAM (found on PATH) is copied to DEST/bin with every library
# ldd says it loads, and the loader itself, into DEST/lib; its interpreter
# and search path are rewritten (patchelf) to point there.  The search path
# is a DT_RPATH (--force-rpath), not a DT_RUNPATH: an RPATH applies to the
# libraries' own dependencies too, a RUNPATH only to the program's.  So the
# tree needs nothing from the image it is copied into, as long as it lands
# at DEST (the paths are absolute); a static program is copied as it is.
set -eu
dest=$1
shift
mkdir -p "$dest/bin" "$dest/lib"
for prog in "$@"; do
    src=$(command -v "$prog") || { echo "assemble: no \`$prog\` on PATH" >&2; exit 1; }
    src=$(readlink -f "$src")
    cp "$src" "$dest/bin/$prog"
    # ldd of a static program says so and fails: nothing to bring.
    if ldd "$src" >/dev/null 2>&1; then
        ldd "$src" | awk '/=> \// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }' | while read -r lib; do
            [ -e "$dest/lib/$(basename "$lib")" ] || cp -L "$lib" "$dest/lib/"
        done
    fi
done
loader=$(ls "$dest"/lib/ld-linux-*.so.* 2>/dev/null | head -n 1)
for f in "$dest"/bin/*; do
    if patchelf --print-interpreter "$f" >/dev/null 2>&1; then
        [ -n "$loader" ] || { echo "assemble: $f is dynamic but no loader was copied" >&2; exit 1; }
        patchelf --set-interpreter "$loader" --force-rpath --set-rpath "$dest/lib" "$f"
    fi
done
# The sampler, preloaded into a service, dlopens the tree's libdw when the
# service has none: its own search path leads to the tree's libelf, zlib...
# (a DT_RPATH covers the dependencies' dependencies too).
[ ! -e "$dest/lib/libdw.so.1" ] || patchelf --force-rpath --set-rpath "$dest/lib" "$dest/lib/libdw.so.1"
# Proof that the tree stands alone: every program starts with only the
# tree's libraries (an empty system library path).
for f in "$dest"/bin/*; do
    case $(basename "$f") in
        busybox) "$f" true ;;
        *) LD_LIBRARY_PATH=/nonexistent "$f" --version >/dev/null ;;
    esac
done
