#!/usr/bin/env bats
# Languages, CPython: the cells of tests/lang/lang_helper.bash (what a
# cell is, how it is held, the known gaps) for python39 python python313.

load test_helper
load lang/lang_helper

LANGS="python39 python python313"
LANG_EXTRA=""
# the wall clock attached too (ph-pyattach: every thread read from outside)
MODES="$MODES attach-wall"

# One test per cell, in the table's order (bats 1.8 has no generated tests).
@test "languages: python39 × flamegraph" { check_cell python39 flamegraph; }
@test "languages: python39 × perf" { check_cell python39 perf; }
@test "languages: python39 × attach-perf" { check_cell python39 attach-perf; }
@test "languages: python39 × attach-flamegraph" { check_cell python39 attach-flamegraph; }
@test "languages: python39 × attach-wall" { check_cell python39 attach-wall; }
@test "languages: python × flamegraph" { check_cell python flamegraph; }
@test "languages: python × perf" { check_cell python perf; }
@test "languages: python × attach-perf" { check_cell python attach-perf; }
@test "languages: python × attach-flamegraph" { check_cell python attach-flamegraph; }
@test "languages: python × attach-wall" { check_cell python attach-wall; }
@test "languages: python313 × flamegraph" { check_cell python313 flamegraph; }
@test "languages: python313 × perf" { check_cell python313 perf; }
@test "languages: python313 × attach-perf" { check_cell python313 attach-perf; }
@test "languages: python313 × attach-flamegraph" { check_cell python313 attach-flamegraph; }
@test "languages: python313 × attach-wall" { check_cell python313 attach-wall; }

@test "languages: the table (language × mode → shares hot/cool, or the refusal)" { lang_table; }
