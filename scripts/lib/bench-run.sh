# Sourced by the fleet benchmarks (scripts/bench-operator.sh, scripts/bench-rollout.sh): stops
# the run in progress on exit or a signal, and assembles the runs' tagged rows into tables.
# The script keeps the pid of its run in `child` while it waits for it, and sets BENCH_NAME.

child=
bench_stop() {
    if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
        echo "$BENCH_NAME: stopping the run (pid $child)" >&2
        kill -INT "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    child=
}
trap 'bench_stop; exit 130' INT
trap 'bench_stop; exit 143' TERM
trap bench_stop EXIT

# bench_tables ROWS TABLE...: for each TABLE, its header once (the first `HEADER TABLE …` line
# of the file ROWS), the markdown separator, then its `ROW TABLE …` lines in run order.
bench_tables() {
    local rows=$1 table header
    shift
    for table in "$@"; do
        header=$(grep -m1 "^HEADER $table " "$rows" | cut -d' ' -f3- || true)
        [ -n "$header" ] || continue
        echo
        echo "$header"
        echo "$header" | sed -E 's/[^|]+/---/g'
        grep "^ROW $table " "$rows" | cut -d' ' -f3-
    done
}
