#!/usr/bin/env bats
# musl images (issue 30, item 2): the sampler's modes on a program built
# with Debian's musl-gcc in a FROM scratch image holding only it and
# musl's loader (tests/lang/musl: Alpine's userland without a registry).
# flamegraph, wall and perf are cells of tests/lang/lang_helper.bash, held
# to 75 ± 5 / 25 ± 5; heap is heapwork (tests/68-heap.bats' service)
# built the same way, held to its in-use shares; massif and callgrind run
# from the tools tree (the image has no package manager), held to
# ms_print's and callgrind_annotate's reading of their output.  The harness preloads the sampler's musl build
# (libphsampler-musl.so) there.

load test_helper
load lang/lang_helper

LANGS="musl"
LANG_EXTRA="muslheap"
MODES="flamegraph wall perf attach-perf attach-flamegraph attach-wall"
# a native program's wall clock cannot be read from outside it (perf
# samples CPU time): attach --mode wall refuses it, as on glibc
KNOWN_GAPS[musl:attach-wall]="refused: service \`musl\`, mode \`wall\`: its processes run lang-musl, none of them a JVM, a CPython or a Node"

@test "musl: the image has musl's loader and no glibc; the mode preloads musl's build" {
    run pl start --mode flamegraph musl
    [ "$status" -eq 0 ]
    c="${PH_TEST_PROJECT}-musl-flamegraph"
    dk inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$c" | grep -qx 'LD_PRELOAD=/opt/profharness/lib/libphsampler-musl.so'
    run pl stop musl
    [ "$status" -eq 0 ]
    # the image is musl's loader and the programs, nothing of glibc
    id=$(dk create "profharness-lang-musl:${PH_LANG_MUSL_TAG}-${PH_LANG_C_TAG}")
    files=$(dk export "$id" | tar -t | grep -v '/$' | sort | tr '\n' ' ')
    dk rm "$id" >/dev/null
    echo "# image files: $files" >&3
    [[ "$files" == *"lib/ld-musl-x86_64.so.1"* ]]
    [[ "$files" != *"ld-linux"* ]]
    [[ "$files" != *"libc.so.6"* ]]
}

@test "languages: musl × flamegraph" { check_cell musl flamegraph; }
@test "languages: musl × wall" { check_cell musl wall; }
@test "languages: musl × perf" { check_cell musl perf; }
# attach: the tools container (glibc's, with perf) joins the musl
# service's PID namespace; perf's symbols from the files the program maps,
# copied from the service's root (musl's loader, the program)
@test "languages: musl × attach-perf" { check_cell musl attach-perf; }
@test "languages: musl × attach-flamegraph" { check_cell musl attach-flamegraph; }
@test "languages: musl × attach-wall" { check_cell musl attach-wall; }

# ms_print's peak snapshot of $1 (massif.out): "TOTAL THREE ONE", its
# total and the bytes of its tree's top entries in keep_three_mib and in
# keep_one_mib (each function allocates at a few lines: summed).
massif_peak() {
    ms_print --threshold=0.01 "$1" | awk '
        /^ Detailed snapshots: / { if (match($0, /[0-9]+ \(peak\)/)) peak = substr($0, RSTART, RLENGTH - 7) }
        peak != "" && $1 == peak && NF == 6 && $2 ~ /^[0-9,]+$/ { t = $3; gsub(",", "", t); on = 1; next }
        on && /^-+$/ { on = 0 }
        on && /^->/ && match($0, /\([0-9,]+B\)/) {
            b = substr($0, RSTART + 1, RLENGTH - 3); gsub(",", "", b)
            if ($0 ~ /: keep_three_mib /) three += b
            if ($0 ~ /: keep_one_mib /) one += b
        }
        END { print t + 0, three + 0, one + 0 }'
}

@test "musl × massif: from the tools tree, musl's malloc replaced: the peak holds keep_three_mib and keep_one_mib 3 : 1 (ms_print)" {
    run pl start --mode massif muslheap
    [ "$status" -eq 0 ]
    ready() { dk logs "${PH_TEST_PROJECT}-muslheap-massif" 2>&1 | grep -q "heapwork: ready"; }
    WAIT_SECONDS=300 wait_for ready
    run pl stop muslheap
    [ "$status" -eq 0 ]
    m="$OUT/muslheap/massif.out"
    read -r total three one <<< "$(massif_peak "$m")"
    echo "# musl × massif: peak $total B: keep_three_mib $three B, keep_one_mib $one B" >&3
    # 3 MiB and 1 MiB kept, at the peak with what churn holds at once
    [ "$three" -ge $((3 * 1048576)) ]
    [ "$three" -le $((3 * 1048576 + 65536)) ]
    [ "$one" -ge 1048576 ]
    [ "$one" -le $((1048576 + 65536)) ]
    [ "$total" -ge $((three + one)) ]
}

@test "musl × callgrind: from the tools tree: hot_seventy_five and cool_twenty_five's instructions 3 : 1 (callgrind_annotate)" {
    run pl start --mode callgrind musl
    [ "$status" -eq 0 ]
    sleep 20
    run pl stop musl
    [ "$status" -eq 0 ]
    run callgrind_annotate "$OUT/musl/callgrind.out"
    [ "$status" -eq 0 ]
    hot=$(printf '%s\n' "$output" | awk '/hot_seventy_five/ { gsub(",", "", $1); print $1; exit }')
    cool=$(printf '%s\n' "$output" | awk '/cool_twenty_five/ { gsub(",", "", $1); print $1; exit }')
    echo "# musl × callgrind: Ir hot_seventy_five $hot, cool_twenty_five $cool" >&3
    [ "${hot:-0}" -gt 1000000 ]
    [ "${cool:-0}" -gt 0 ]
    share=$(( 1000 * hot / (hot + cool) ))
    [ "$share" -ge 740 ]
    [ "$share" -le 760 ]
}

@test "musl × heap: in use 75 / 25 (keep_three_mib, keep_one_mib) through musl's malloc, interposed, each block counted once" {
    local prof=$BATS_FILE_TMPDIR/heap-profiles d three one
    mkdir -p "$prof"
    cp "$REPO"/profiles/*.yaml "$prof/"
    # 4 KiB between samples, as tests/68-heap.bats (512 KiB gives too few of 4 MiB)
    sed -i 's/^\(  PH_SAMPLER_HEAP:\) .*/\1 "4096"/' "$prof/heap.yaml"
    run timeout 900 "$PH" -f "$LANGC" -p "$PH_TEST_PROJECT" --profiles "$prof" -o "$OUT" start --mode heap muslheap
    [ "$status" -eq 0 ]
    ready() { dk logs "${PH_TEST_PROJECT}-muslheap-heap" 2>&1 | grep -q "heapwork: ready"; }
    wait_for ready
    run timeout 900 "$PH" -f "$LANGC" -p "$PH_TEST_PROJECT" --profiles "$prof" -o "$OUT" stop muslheap
    [ "$status" -eq 0 ]
    d="$OUT/muslheap"
    three=$(share "keep_three_mib;" "$d/inuse_space.folded")
    one=$(share "keep_one_mib;" "$d/inuse_space.folded")
    alloc=$(share "churn_hundred_mib;" "$d/alloc_space.folded")
    echo "# musl × heap: in use keep_three_mib $three, keep_one_mib $one; allocated: churn $alloc (per mille)" >&3
    [ "$three" -ge 700 ]
    [ "$three" -le 800 ]
    [ "$one" -ge 200 ]
    [ "$one" -le 300 ]
    # musl's calloc, realloc, posix_memalign and memalign call its public
    # malloc and aligned_alloc, which are the sampler's: a block is counted
    # once, by the call the service made (100 of 104 MiB: 962 per mille)
    run grep -E ';(calloc|realloc|posix_memalign|aligned_alloc|memalign|valloc);[a-z_]+ [0-9]+$' "$d/alloc_space.folded"
    [ "$status" -eq 1 ]
    [ "$alloc" -ge 940 ]
    [ "$alloc" -le 980 ]
    # the program's callers from its CFI (it has no frame pointers), as on glibc
    grep -q ';main;keep_three_mib;posix_memalign ' "$d/inuse_space.folded"
}

@test "musl: the table" { lang_table; }
