#!/usr/bin/env bash
# mutants.sh - a small mutation check: do the tests catch realistic one-line
# bugs in the security-critical modules?
#
#   tests/mutants.sh [MODULE...]      every list in tests/mutants/ (or MODULE.txt)
#
# Each line of tests/mutants/MODULE.txt is one mutant, tab-separated:
#   FILE  EXACT-SUBSTRING-OF-ONE-LINE  REPLACEMENT  COMMAND-THAT-MUST-FAIL  why
# (tests/mutants/README says more).  For each, in a private copy of the
# tree (build-mutants/tree, never the real one): the substring, which must
# occur exactly once in FILE, is replaced; the tree is rebuilt (make is
# incremental: only what depends on FILE); COMMAND runs from the copy's top
# with a timeout; FILE is put back.  What is rebuilt is `all` and the
# build/ paths COMMAND names (or all the tests when it names none), so a
# command that needs more must name it.  A mutant is killed when COMMAND exits
# non-zero (a timeout is a kill: the tests noticed), survives when it exits
# 0, and is invalid when it does not apply or does not build.
#
# Before the mutants, every COMMAND must pass on the unmutated copy; the
# mutants of a command that fails there are not run (invalid).
#
# Prints one line per mutant, the kill ratio per module and in total (over
# the valid mutants), and the survivors.  Exit status: 0 when every valid
# mutant was killed and none was invalid, 1 otherwise.
#
# MUTANT_TIMEOUT (seconds, default 300) bounds each COMMAND.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD
W=$REPO/build-mutants
T=$W/tree
TIMEOUT=${MUTANT_TIMEOUT:-300}

lists=()
if [ $# -gt 0 ]; then
    for m in "$@"; do
        [ -f "tests/mutants/$m.txt" ] || { echo "mutants.sh: no list tests/mutants/$m.txt" >&2; exit 2; }
        lists+=("tests/mutants/$m.txt")
    done
else
    for f in tests/mutants/*.txt; do [ -e "$f" ] && lists+=("$f"); done
fi
[ ${#lists[@]} -gt 0 ] || { echo "mutants.sh: no lists in tests/mutants/" >&2; exit 2; }

# ---- the private copy: the working tree's files (tracked and new, not
# ignored), with the copy's build/ kept between runs so make stays
# incremental.  Files gone from the tree go from the copy too.
mkdir -p "$T" "$W/log"
# A run cut short may have left its mutant in the copy, newer than the
# tree's file (cp -u would keep it): put it back first.
if [ -s "$W/dirty" ]; then
    f=$(cat "$W/dirty"); [ -f "$f" ] && cp "$f" "$T/$f" && touch "$T/$f"; rm -f "$W/dirty"
fi
git ls-files -co --exclude-standard -z | sort -z >"$W/files"
(cd "$T" && find . -path ./build -prune -o -type f -printf '%P\0' | sort -z) >"$W/copied"
comm -z -13 "$W/files" "$W/copied" | (cd "$T" && xargs -0 -r rm -f)
# cp -u: a file the tree has not changed keeps its copy and its mtime.
(xargs -0 -r cp -a -u --parents -t "$T") <"$W/files"

# Interrupted mid-mutant: put the file back.
restore() {
    if [ -s "$W/dirty" ]; then cp "$W/orig" "$T/$(cat "$W/dirty")" && touch "$T/$(cat "$W/dirty")"; rm -f "$W/dirty"; fi
}
trap restore EXIT
trap 'exit 130' INT TERM

# count FILE SUBSTRING: how often SUBSTRING occurs in FILE.
count() {
    SUB=$2 perl -0777 -ne '$n = 0; $p = 0; while (($p = index($_, $ENV{SUB}, $p)) >= 0) { $n++; $p++ } print $n' "$1"
}
# apply FILE SUBSTRING REPLACEMENT: replace its one occurrence, in place.
apply() {
    SUB=$2 REP=$3 perl -0777 -i -pe '$i = index($_, $ENV{SUB}); substr($_, $i, length $ENV{SUB}) = $ENV{REP}' "$1"
}

# build [COMMAND]: `all` and what COMMAND names under build/ (its test
# binary), or everything when it names nothing there; relinking every test
# binary for each mutant would cost more than the tests.
build() {
    local targets
    targets=$(grep -oE '(^|[[:space:]])build/[^[:space:];|&)]+' <<<"${1:-}" | tr -d ' \t' | sort -u | tr '\n' ' ')
    (cd "$T" && make -j2 all ${targets:-tests-build}) >"$W/log/build.log" 2>&1
}

echo "== building the copy ($T)"
if ! build; then
    tail -30 "$W/log/build.log"; echo "mutants.sh: the unmutated copy does not build" >&2; exit 1
fi

# ---- read every list; check each line before running anything.
files=() subs=() reps=() cmds=() whys=() mods=() valid=()
for l in "${lists[@]}"; do
    mod=$(basename "$l" .txt) ln=0
    while IFS= read -r line || [ -n "$line" ]; do
        ln=$((ln + 1))
        [[ -z ${line//[[:space:]]/} || $line == \#* ]] && continue
        # read's IFS would merge empty fields; an empty REPLACEMENT deletes.
        mapfile -t -d $'\t' fld < <(printf '%s' "$line")
        f=${fld[0]:-} s=${fld[1]:-} r=${fld[2]:-} c=${fld[3]:-} w=${fld[4]:-}
        why=""
        if [ -z "${c:-}" ]; then why="$l:$ln: fewer than 4 tab-separated fields"
        elif [ ! -f "$T/$f" ]; then why="$l:$ln: no file $f"
        elif [ "$(count "$T/$f" "$s")" != 1 ]; then why="$l:$ln: \`$s\` occurs $(count "$T/$f" "$s") times in $f, not once"
        fi
        files+=("$f") subs+=("$s") reps+=("$r") cmds+=("$c") whys+=("${w:-}") mods+=("$mod") valid+=("$why")
    done <"$l"
done

# ---- every command passes on the unmutated copy.
declare -A base
for i in "${!cmds[@]}"; do
    c=${cmds[$i]}
    [ -n "$c" ] && [ -z "${base[$c]+x}" ] || continue
    if (cd "$T" && timeout "$TIMEOUT" bash -c "$c") >"$W/log/baseline.log" 2>&1; then
        base[$c]=ok
    else
        base[$c]=fail
        echo "baseline: \`$c\` fails on the unmutated tree; its mutants are not run" >&2
        tail -20 "$W/log/baseline.log" >&2
    fi
done

# ---- the mutants.
declare -A killed total
survivors=() invalid=()
k_all=0 n_all=0
echo "== ${#files[@]} mutants"
for i in "${!files[@]}"; do
    f=${files[$i]} s=${subs[$i]} r=${reps[$i]} c=${cmds[$i]} mod=${mods[$i]}
    what="$mod: $f: \`$s\` -> \`$r\`"
    if [ -n "${valid[$i]}" ]; then
        invalid+=("${valid[$i]}"); echo "invalid   $what (${valid[$i]})"; continue
    fi
    if [ "${base[$c]}" != ok ]; then
        invalid+=("$what (its command fails unmutated)"); echo "invalid   $what (command fails unmutated)"; continue
    fi
    cp "$T/$f" "$W/orig"
    printf '%s' "$f" >"$W/dirty"
    apply "$T/$f" "$s" "$r"
    start=$SECONDS
    if ! build "$c"; then
        result=invalid
        invalid+=("$what (does not build: $(grep -m1 -E ': (fatal )?error:' "$W/log/build.log"))")
    elif (cd "$T" && timeout "$TIMEOUT" bash -c "$c") >"$W/log/run.log" 2>&1; then
        result=SURVIVED
        survivors+=("$what  [$c]  ${whys[$i]}")
    else
        result=killed
    fi
    # Back, with a new mtime: what was built from the mutant is older.
    cp "$W/orig" "$T/$f" && touch "$T/$f" && rm -f "$W/dirty"
    if [ $result != invalid ]; then
        total[$mod]=$(( ${total[$mod]:-0} + 1 )); n_all=$((n_all + 1))
        [ $result = killed ] && { killed[$mod]=$(( ${killed[$mod]:-0} + 1 )); k_all=$((k_all + 1)); }
    fi
    printf '%-9s %s (%ss)\n' "$result" "$what" $((SECONDS - start))
done
build || { echo "mutants.sh: the copy does not build after restoring" >&2; exit 1; }

echo "== kill ratio"
for mod in $(printf '%s\n' "${mods[@]}" | sort -u); do
    n=${total[$mod]:-0} k=${killed[$mod]:-0}
    printf '%-10s %d/%d killed (%s%%)\n' "$mod" "$k" "$n" "$([ "$n" -gt 0 ] && echo $((100 * k / n)) || echo -)"
done
printf '%-10s %d/%d killed (%s%%), %d invalid\n' total "$k_all" "$n_all" \
    "$([ "$n_all" -gt 0 ] && echo $((100 * k_all / n_all)) || echo -)" ${#invalid[@]}
if [ ${#survivors[@]} -gt 0 ]; then
    echo "== survivors"; printf '  %s\n' "${survivors[@]}"
fi
if [ ${#invalid[@]} -gt 0 ]; then
    echo "== invalid"; printf '  %s\n' "${invalid[@]}"
fi
[ ${#survivors[@]} -eq 0 ] && [ ${#invalid[@]} -eq 0 ]
