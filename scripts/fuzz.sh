#!/usr/bin/env bash
# Run every libFuzzer target for a bounded time or number of executions and
# merge the inputs that add coverage into its seed corpus (make fuzz).
#
#   FUZZ_SECONDS   wall-clock budget per target (default 60)
#   FUZZ_RUNS      stop a target after this many executions (default: no limit)
#   FUZZ_TARGETS   which targets (default: all seven)
#   FUZZ_BUILD     build directory (default build-fuzz)
#   FUZZ_LOG       summary file, one line per target (default $FUZZ_BUILD/fuzz-summary.txt)
#   FUZZ_FORK      run each target as N parallel libFuzzer jobs (-fork=N) in
#                  one run; FUZZ_RUNS then counts the executions of all jobs
#
# Needs clang (scripts/deps.sh installs it). A target stops at whichever limit
# comes first. New inputs go to a scratch directory first; `-merge=1` then
# copies into tests/fuzz/corpus/<target> only those that reach new edges
# (hit counts aside) beyond the seeds already there, so the
# corpus stays small. A crash leaves its input in $FUZZ_BUILD/findings/<target>/
# and makes the script exit non-zero after the remaining targets ran.
set -u
cd "$(dirname "$0")/.."
SRC=$PWD
BUILD=${FUZZ_BUILD:-build-fuzz}
SECONDS_PER=${FUZZ_SECONDS:-60}
RUNS=${FUZZ_RUNS:--1}
TARGETS=${FUZZ_TARGETS:-"csi_request gantryctl_input kube_parse extender target_rpc cgroup_io usage_metrics"}
LOG=${FUZZ_LOG:-$BUILD/fuzz-summary.txt}
FORK=${FUZZ_FORK:-0}
MAX_LEN=${FUZZ_MAX_LEN:-8192}

if ! command -v clang >/dev/null; then
        echo "fuzz: clang not found; run scripts/deps.sh" >&2
        exit 2
fi
CC=clang cmake -S "$SRC" -B "$BUILD" -DGANTRY_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 2
bins=()
for t in $TARGETS; do bins+=("fuzz_$t"); done
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target "${bins[@]}" || exit 2

status=0
mkdir -p "$(dirname "$LOG")"
for t in $TARGETS; do
        bin=$BUILD/tests/fuzz_$t
        corpus=$SRC/tests/fuzz/corpus/$t
        work=$BUILD/fuzz-work/$t
        findings=$BUILD/findings/$t
        out=$BUILD/fuzz-$t.log
        rm -rf "$work"
        mkdir -p "$work" "$findings" "$corpus"
        before=$(ls "$corpus" | wc -l)
        start=$(date +%s)
        fork=()
        [ "$FORK" -gt 0 ] && fork=(-fork="$FORK")
        "$bin" "${fork[@]}" -max_total_time="$SECONDS_PER" -runs="$RUNS" -max_len="$MAX_LEN" \
                -print_final_stats=1 -artifact_prefix="$findings/" \
                "$work" "$corpus" >"$out" 2>&1
        rc=$?
        elapsed=$(( $(date +%s) - start ))
        # the stat line libFuzzer prints at exit: stat::number_of_executed_units: N
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out" | tail -1)
        if [ "$FORK" -gt 0 ]; then
                # fork mode prints no stat:: lines; its progress lines start "#N: cov:"
                execs=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$out" | tail -1)
                [ -n "$execs" ] && [ "$elapsed" -gt 0 ] && rate=$(( execs / elapsed ))
        fi
        crashes=$(ls "$findings" | wc -l)
        # edges only (-use_counters=0): hit-count variants would bloat the corpus
        "$bin" -merge=1 -use_counters=0 -max_len="$MAX_LEN" "$corpus" "$work" >>"$out" 2>&1
        after=$(ls "$corpus" | wc -l)
        line="$(date -u +%FT%TZ) fuzz_$t rc=$rc execs=${execs:-?} exec/s=${rate:-?} seconds=$elapsed findings=$crashes corpus=$before->$after"
        echo "$line" | tee -a "$LOG"
        if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
                status=1
        fi
done
exit $status
