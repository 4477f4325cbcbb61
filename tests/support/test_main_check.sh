#!/usr/bin/env bash
# usage: test_main_check.sh TEST_STATUS TEST_HLO
# The command line of the CMocka test binaries (tests/support/test_main.c), on a
# binary of one group (test_status) and one of several (test_hlo): -f runs
# exactly the cases it names (CMocka's "[ RUN      ] name" lines), -l lists
# them, -h prints the usage, and a bad command line exits 2 with one message.
set -u
status_bin=$1
hlo_bin=$2
unset CMOCKA_MESSAGE_OUTPUT CMOCKA_XML_FILE
fails=0

fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# expect_run WANT CMD...: CMD exits 0 and runs exactly the cases WANT (one per line).
expect_run() {
    local want=$1 out rc got
    shift
    out=$("$@" 2>&1)
    rc=$?
    got=$(printf '%s\n' "$out" | sed -n 's/^\[ RUN      \] //p')
    if [ "$rc" -ne 0 ] || [ "$got" != "$want" ]; then
        fail "$* (exit $rc) ran [$got], want [$want]"
        printf '%s\n' "$out"
    fi
}

# expect_out RC WANT CMD...: CMD exits RC and its stdout is WANT.
expect_out() {
    local rc_want=$1 want=$2 got rc
    shift 2
    got=$("$@" 2>/dev/null)
    rc=$?
    if [ "$rc" -ne "$rc_want" ] || [ "$got" != "$want" ]; then
        fail "$* (exit $rc, want $rc_want) printed [$got], want [$want]"
    fi
}

# expect_error REGEX CMD...: CMD exits 2, runs nothing, and says REGEX on stderr.
expect_error() {
    local regex=$1 out err rc
    shift
    err=$("$@" 2>&1 >/dev/null)
    rc=$?
    out=$("$@" 2>/dev/null)
    if [ "$rc" -ne 2 ] || ! printf '%s\n' "$err" | grep -q -- "$regex" ||
        printf '%s\n' "$out" | grep -q '^\[ RUN'; then
        fail "$* (exit $rc, want 2): stderr [$err], want /$regex/"
    fi
}

# One group.
expect_run test_strings "$status_bin" -f test_strings
expect_run test_first_writer_wins "$status_bin" -f 'test_*_wins'
expect_run test_strings "$status_bin" -f 'test_s?rings'
expect_run $'test_strings\ntest_first_writer_wins\ntest_allocator_hook' "$status_bin"
expect_out 0 $'test_strings\ntest_first_writer_wins\ntest_allocator_hook' "$status_bin" -l
expect_out 0 test_allocator_hook "$status_bin" -l -f '*hook'
if ! "$status_bin" -h | grep -q '^usage: .*-f PATTERN'; then
    fail "$status_bin -h: no usage line on stdout"
fi
expect_error "unknown option '-z'" "$status_bin" -z
expect_error "unknown option '--filter'" "$status_bin" --filter test_strings
expect_error "-f needs a PATTERN" "$status_bin" -f
expect_error "no case matches 'test_nothing'" "$status_bin" -f test_nothing
expect_error "unexpected argument 'core'" "$status_bin" core

# Several groups: without GROUP, -f and -l look in every group.
expect_run test_errors "$hlo_bin" -f test_errors
expect_out 0 test_fuzz "$hlo_bin" fuzz -l
expect_out 0 test_oom_loop "$hlo_bin" -l -f '*_loop'
if [ "$("$hlo_bin" -l | wc -l)" -ne "$(("$("$hlo_bin" core -l | wc -l)" + 2))" ]; then
    fail "$hlo_bin -l does not list every group"
fi
expect_error "no group 'nosuch'" "$hlo_bin" nosuch
expect_error "no case matches 'test_errors'" "$hlo_bin" oom -f test_errors

if [ "$fails" -ne 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "all checks passed"
