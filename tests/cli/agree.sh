# Sourced by the tests that check two tools report one modeled figure
# (bench_scale_agrees.sh, tests/mpi/bench_vs_model.sh).
# agree CASE NAME_A A NAME_B B: one line, "ok" or "FAIL"; a FAIL (A empty or
# A != B) sets bad=1.
agree() {
    if [ -z "$3" ] || [ "$3" != "$5" ]; then
        echo "FAIL: $1: $2 '$3' us, $4 '$5' us"
        bad=1
    else
        echo "ok: $1: $3 us"
    fi
}
