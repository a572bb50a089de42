#!/usr/bin/env bash
# run.sh - build and run the libFuzzer targets of tests/fuzz/.
#
#   tests/fuzz/run.sh TARGET [SECONDS]   fuzz one target (default 60 s), niced
#       (PH_FUZZ_NICE, default 10; 0 makes it a CPU hog beside a soak), one
#       process.  The corpus grows in build-fuzz/corpus/TARGET (seeded from
#       tests/fuzz/seeds/TARGET), crashes are saved in build-fuzz/crashes/TARGET/
#       (crash-<sha1>, leak-…, timeout-…, oom-…), and one line of figures is
#       appended to build-fuzz/figures.tsv: date, target, seconds, CPU seconds,
#       executions, coverage (cov), features (ft), corpus size, crashes.
#   tests/fuzz/run.sh --smoke [TARGET...] every target (or those named) over its
#       seeds, then a few thousand runs or 10 s; one "ok: fuzz_T" or
#       "not ok: fuzz_T" line each (scripts/run-tests.sh counts them).
#   tests/fuzz/run.sh --seeds [TARGET...] the same over the seeds, then 1,000
#       runs or 2 s (the edit loop's: scripts/run-tests.sh --fast).
#   tests/fuzz/run.sh --list             the targets there are.
#
# TARGET is the part after fuzz_: `yaml` for tests/fuzz/fuzz_yaml.c.  A file
# tests/fuzz/fuzz_TARGET.dict, when present, is given to libFuzzer as -dict.
# A reproducer of a fixed crash belongs in the seeds: the smoke run then
# runs it every time.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
F=build-fuzz

targets() {
    local f
    for f in tests/fuzz/fuzz_*.c; do
        [ -e "$f" ] || continue
        f=${f##*/fuzz_}
        echo "${f%.c}"
    done
}

# build TARGET...: the binaries, quietly unless the build fails.
build() {
    local out
    out=$(make -j2 "${@/#/$F/fuzz_}" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }
}

dict_args() {
    [ -f "tests/fuzz/fuzz_$1.dict" ] && echo "-dict=tests/fuzz/fuzz_$1.dict"
}

# Sanitizer reports must stop the run: the library is built with ASan and
# UBSan, and libFuzzer catches leaks itself.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

smoke_runs=10000 smoke_secs=10
smoke() {
    local t tmp rc repro status=0
    local -a list
    if [ $# -gt 0 ]; then list=("$@"); else mapfile -t list < <(targets); fi
    [ ${#list[@]} -gt 0 ] || return 0
    if ! build "${list[@]}"; then
        for t in "${list[@]}"; do echo "not ok: fuzz_$t (did not build)"; done
        return 1
    fi
    for t in "${list[@]}"; do
        tmp=$(mktemp -d /tmp/ph-fuzz-smoke.XXXXXX)
        mkdir -p "$tmp/corpus"
        # Seeds first (each one run), then mutations from them.
        "$F/fuzz_$t" -runs=$smoke_runs -max_total_time=$smoke_secs -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$tmp/" $(dict_args "$t") "$tmp/corpus" "tests/fuzz/seeds/$t" >"$tmp/log" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && ! ls "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-* "$tmp"/oom-* >/dev/null 2>&1; then
            echo "ok: fuzz_$t ($(grep -oE '^#[0-9]+' "$tmp/log" | tail -1 | tr -d '#') runs)"
        else
            tail -40 "$tmp/log"
            # keep the reproducer where the long runs keep theirs
            repro=$(ls "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-* "$tmp"/oom-* 2>/dev/null | head -1)
            if [ -n "$repro" ]; then
                mkdir -p "$F/crashes/$t" && cp "$repro" "$F/crashes/$t/"
                repro="; reproduce with $F/fuzz_$t $F/crashes/$t/${repro##*/}"
            fi
            echo "not ok: fuzz_$t (exit $rc$repro)"
            status=1
        fi
        rm -rf "$tmp"
    done
    return $status
}

fuzz() {
    local t=$1 secs=${2:-60} corpus crashes log rc before after line cpu
    [ -f "tests/fuzz/fuzz_$t.c" ] || { echo "run.sh: no target tests/fuzz/fuzz_$t.c (have: $(targets | tr '\n' ' '))" >&2; return 2; }
    [[ $secs =~ ^[0-9]+$ ]] || { echo "run.sh: SECONDS must be a whole number, not \`$secs\`" >&2; return 2; }
    build "$t" || return 1
    corpus=$F/corpus/$t crashes=$F/crashes/$t log=$F/logs/$t-$(date -u +%Y%m%dT%H%M%SZ).log
    mkdir -p "$corpus" "$crashes" "$F/logs"
    before=$(find "$crashes" -type f | wc -l)
    echo "fuzz_$t: ${secs}s, corpus $corpus, crashes in $crashes/, log $log" >&2
    # /usr/bin/time: the CPU seconds the target used, for the figures.
    /usr/bin/time -f '%U %S' -o "$log.time" nice -n "${PH_FUZZ_NICE:-10}" "$F/fuzz_$t" -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" $(dict_args "$t") \
        "$corpus" "tests/fuzz/seeds/$t" >"$log" 2>&1
    rc=$?
    after=$(find "$crashes" -type f | wc -l)
    line=$(grep -E '[[:space:]](DONE|pulse|NEW|REDUCE|INITED)[[:space:]].*cov: ' "$log" | tail -1)
    cpu=$(awk '{printf "%.0f", $1 + $2}' "$log.time" 2>/dev/null)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%d)" "$t" "$secs" "${cpu:-?}" \
        "$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)" \
        "$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$line")" "$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$line")" \
        "$(find "$corpus" -type f | wc -l)" "$((after - before))" | tee -a "$F/figures.tsv"
    if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
        grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5 >&2
        echo "fuzz_$t: found $((after - before)) crash(es), exit $rc; see $log and $crashes/" >&2
        return 1
    fi
}

case "${1:-}" in
--smoke) shift; smoke "$@" ;;
--seeds) shift; smoke_runs=1000 smoke_secs=2; smoke "$@" ;;
--list) targets ;;
'' | -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ] ;;
*) fuzz "$@" ;;
esac
