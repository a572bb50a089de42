#!/usr/bin/env bats
# Languages, native programs: the cells of tests/lang/lang_helper.bash (what a
# cell is, how it is held, the known gaps) for c cpp rust gostatic gocgo
# gostrip gostaticstrip (the cgo and the static program stripped: named
# from Go's .gopclntab).

load test_helper
load lang/lang_helper

LANGS="c cpp rust gostatic gocgo gostrip gostaticstrip"
LANG_EXTRA=""

# One test per cell, in the table's order (bats 1.8 has no generated tests).
@test "languages: c × flamegraph" { check_cell c flamegraph; }
@test "languages: c × perf" { check_cell c perf; }
@test "languages: c × attach-perf" { check_cell c attach-perf; }
@test "languages: c × attach-flamegraph" { check_cell c attach-flamegraph; }
@test "languages: cpp × flamegraph" { check_cell cpp flamegraph; }
@test "languages: cpp × perf" { check_cell cpp perf; }
@test "languages: cpp × attach-perf" { check_cell cpp attach-perf; }
@test "languages: cpp × attach-flamegraph" { check_cell cpp attach-flamegraph; }
@test "languages: rust × flamegraph" { check_cell rust flamegraph; }
@test "languages: rust × perf" { check_cell rust perf; }
@test "languages: rust × attach-perf" { check_cell rust attach-perf; }
@test "languages: rust × attach-flamegraph" { check_cell rust attach-flamegraph; }
@test "languages: gostatic × flamegraph" { check_cell gostatic flamegraph; }
@test "languages: gostatic × perf" { check_cell gostatic perf; }
@test "languages: gostatic × attach-perf" { check_cell gostatic attach-perf; }
@test "languages: gostatic × attach-flamegraph" { check_cell gostatic attach-flamegraph; }
@test "languages: gocgo × flamegraph" { check_cell gocgo flamegraph; }
@test "languages: gocgo × perf" { check_cell gocgo perf; }
@test "languages: gocgo × attach-perf" { check_cell gocgo attach-perf; }
@test "languages: gocgo × attach-flamegraph" { check_cell gocgo attach-flamegraph; }
@test "languages: gostrip × flamegraph" { check_cell gostrip flamegraph; }
@test "languages: gostrip × perf" { check_cell gostrip perf; }
@test "languages: gostrip × attach-perf" { check_cell gostrip attach-perf; }
@test "languages: gostrip × attach-flamegraph" { check_cell gostrip attach-flamegraph; }
@test "languages: gostaticstrip × flamegraph" { check_cell gostaticstrip flamegraph; }
@test "languages: gostaticstrip × perf" { check_cell gostaticstrip perf; }
@test "languages: gostaticstrip × attach-perf" { check_cell gostaticstrip attach-perf; }
@test "languages: gostaticstrip × attach-flamegraph" { check_cell gostaticstrip attach-flamegraph; }

@test "languages: the table (language × mode → shares hot/cool, or the refusal)" { lang_table; }
