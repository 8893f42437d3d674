# Sourced by the fleet benchmarks (scripts/bench-operator.sh, scripts/bench-rollout.sh): runs
# one run at a time, stops it on exit or a signal, and assembles the runs' tagged rows into tables.
# The script sets BENCH_NAME, RUN_TIMEOUT, LOG and ROWS (BENCH_NICE: default 19) before it sources this.

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

# bench_run LABEL OUT COMMAND...: runs COMMAND under `nice -n ${BENCH_NICE:-19}` (SIGINT after
# $RUN_TIMEOUT, so the run stops its processes; SIGKILL a minute later), its stdout to OUT and
# its stderr to $LOG as well; on success appends OUT to $ROWS, else says why and sets failed=1.
bench_run() {
    local label=$1 out=$2 status=0
    shift 2
    nice -n "${BENCH_NICE:-19}" timeout --signal=INT --kill-after=60 "$RUN_TIMEOUT" "$@" \
        >"$out" 2> >(tee -a "$LOG" >&2) &
    child=$!
    wait "$child" || status=$?
    child=
    if [ "$status" != 0 ]; then
        [ "$status" = 124 ] && echo "$BENCH_NAME: $label: timed out after $RUN_TIMEOUT" >&2
        echo "$BENCH_NAME: $label FAILED (exit $status); see $LOG" >&2
        failed=1
        return 0
    fi
    cat "$out" >>"$ROWS"
}
