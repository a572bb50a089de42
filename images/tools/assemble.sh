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
    name=$prog
    # Debian's valgrind is a shell script that runs valgrind.bin, the
    # launcher: the launcher is what the tree carries (see below).
    if [ "$prog" = valgrind ] && command -v valgrind.bin >/dev/null; then
        src=$(command -v valgrind.bin)
        name=valgrind.bin
    fi
    src=$(readlink -f "$src")
    cp "$src" "$dest/bin/$name"
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
# valgrind: the launcher execs the tool (e.g. massif-amd64-linux, static)
# from VALGRIND_LIB, and the tool preloads vgpreload_*.so (no library
# needed: they import nothing) into the program, which runs on its own
# loader and C library.  So the tree carries valgrind's tool directory
# (its suppressions, default.supp, with it) and bin/valgrind is a script of
# the tree's busybox that names that directory; the 32-bit x86 tools stay
# out.
if [ -e "$dest/bin/valgrind.bin" ]; then
    vglib=
    for d in /usr/libexec/valgrind /usr/lib/valgrind; do
        if [ -z "$vglib" ] && ls "$d"/none-*-linux >/dev/null 2>&1; then vglib=$d; fi
    done
    [ -n "$vglib" ] || { echo "assemble: valgrind's tool directory is not where Debian puts it" >&2; exit 1; }
    mkdir -p "$dest/libexec"
    cp -a "$vglib" "$dest/libexec/valgrind"
    rm -f "$dest"/libexec/valgrind/*-x86-linux*
    # Debug info beside the tree (the tools image's libc6-dbg, by build
    # id): valgrind looks there only by a library's debug link, under the
    # library's directory, so each file is linked by its name there too
    # (Debian's debug link is the build id's rest; a build that is not
    # this libc6's has another id, and nothing is read).
    dbg=$(dirname "$dest")/debug
    dbgopt=
    if [ -d "$dbg/.build-id" ]; then
        for libdir in $(dirname "$(readlink -f /lib*/ld-linux*.so.*)" | sort -u); do
            mkdir -p "$dbg$libdir"
            for f in "$dbg"/.build-id/*/*.debug; do
                ln -sf "$f" "$dbg$libdir/$(basename "$f")"
            done
        done
        dbgopt="--extra-debuginfo-path=$dbg "
    fi
    cat > "$dest/bin/valgrind" <<EOF
#!$dest/bin/busybox sh
VALGRIND_LIB=$dest/libexec/valgrind
export VALGRIND_LIB
exec $dest/bin/valgrind.bin $dbgopt"\$@"
EOF
    chmod 755 "$dest/bin/valgrind"
fi
# Proof that the tree stands alone: every program starts with only the
# tree's libraries (an empty system library path).
for f in "$dest"/bin/*; do
    case $(basename "$f") in
        busybox) "$f" true ;;
        vgdb) LD_LIBRARY_PATH=/nonexistent "$f" --help >/dev/null ;;
        # valgrind: its launcher finds a tool and runs a program under it
        valgrind) LD_LIBRARY_PATH=/nonexistent "$f" -q --tool=none "$dest/bin/busybox" true ;;
        *) LD_LIBRARY_PATH=/nonexistent "$f" --version >/dev/null ;;
    esac
done
