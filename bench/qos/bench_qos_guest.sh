#!/usr/bin/env bash
# Runs inside the test VM (tests/vm/run.sh), as root on Debian's kernel:
# the accuracy and the cost of a cgroup v2 io.max cap, as the node plugin
# sets it for a pod, on a null_blk device (a loop device on a tmpfs file
# when null_blk is missing). Prints ratios against baselines measured in the
# same run; asserts no time.
#
#   bench_qos_guest.sh [SECONDS_PER_RUN]
#
# Cap accuracy: a reader in its own cgroup reads the device flat out with
# O_DIRECT under an rbps cap of 20, 50 and 100 MB/s; measured = the growth
# of the cgroup's io.stat rbytes over the run (after a second of warm-up),
# and the ratio measured / cap.
# Cost of a cap: the same reader with no io.max line, then with a line far
# above what the device can give (rbps=wbps=1 TB/s), back to back, 7 pairs;
# the median of the pairs' ratios capped / uncapped (pairs, because the
# emulated machine's speed drifts more between rounds than within a pair).
#
# With GANTRY_BENCH_QOS_CAPTURE=DIR the io.stat and io.pressure of one run
# are copied there (real contents for the parser's tests).
set -euo pipefail
secs=${1:-4}
cg=/sys/fs/cgroup

if [ "$(stat -fc %T $cg 2>/dev/null)" != cgroup2fs ]; then
        mount -t cgroup2 none $cg 2>/dev/null || { umount -R $cg 2>/dev/null; mount -t cgroup2 none $cg; }
fi
grep -qw io $cg/cgroup.controllers || { echo "bench_qos: no io controller in cgroup v2"; exit 1; }
echo +io >$cg/cgroup.subtree_control

dev=
if modprobe null_blk nr_devices=1 gb=64 bs=4096 queue_mode=2 irqmode=0 2>/dev/null &&
        [ -b /dev/nullb0 ]; then
        dev=/dev/nullb0
        what="null_blk (no data: the device's own rate is the CPU's)"
else
        truncate -s 1G /tmp/bench_qos.img
        dev=$(losetup --direct-io=on -f --show /tmp/bench_qos.img)
        dd if=/dev/zero of="$dev" bs=1M count=1024 oflag=direct status=none
        what="loop on a tmpfs file"
fi
majmin=$(printf '%d:%d' "0x$(stat -c %t "$dev")" "0x$(stat -c %T "$dev")")
echo "bench_qos: device $dev ($majmin), $what, ${secs} s per run"

# rbytes of $majmin in cgroup $1 (0 when it has no line yet), read by the
# node plugin's own parser when the build is there
reader=${GANTRY_BUILD_DIR:-build}/tests/qos_io_read
rbytes() {
        if [ -x "$reader" ]; then
                "$reader" "$1" "$majmin" | cut -d' ' -f1
        else
                awk -v d="$majmin" '$1==d { for (i=2;i<=NF;i++) if ($i ~ /^rbytes=/) { sub("rbytes=","",$i); print $i; f=1 } } END { if (!f) print 0 }' "$1/io.stat"
        fi
}

# reads flat out in a fresh cgroup with io.max line $1 ("" for none);
# prints the steady rate in bytes/s: the cgroup's rbytes over $secs seconds
# taken after a second of warm-up (process start is not the cap's doing)
run() {
        local line=$1 d=$cg/gantry-bench-$$-$RANDOM pid t0 t1 b0 b1
        mkdir "$d"
        [ -z "$line" ] || echo "$majmin $line" >"$d/io.max"
        bash -c "echo \$\$ >$d/cgroup.procs; exec dd if=$dev of=/dev/null bs=1M iflag=direct status=none" &
        pid=$!
        sleep 1
        b0=$(rbytes "$d") t0=$(date +%s%N)
        sleep "$secs"
        b1=$(rbytes "$d") t1=$(date +%s%N)
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        if [ -n "${GANTRY_BENCH_QOS_CAPTURE:-}" ] && [ ! -e "$GANTRY_BENCH_QOS_CAPTURE/io.stat" ]; then
                cp "$d/io.stat" "$d/io.pressure" "$d/io.max" "$GANTRY_BENCH_QOS_CAPTURE/" 2>/dev/null || true
                echo "$majmin" >"$GANTRY_BENCH_QOS_CAPTURE/device"
        fi
        rmdir "$d"
        awk -v b="$((b1 - b0))" -v t="$((t1 - t0))" 'BEGIN { printf "%.0f\n", b * 1e9 / t }'
}

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mbs() { awk -v b="$1" 'BEGIN { printf "%.1f MB/s", b/1e6 }'; }

echo "bench_qos: cap accuracy (measured / cap)"
for cap_mb in 20 50 100; do
        cap=$((cap_mb * 1000000))
        got=$(run "rbps=$cap")
        awk -v g="$got" -v c="$cap" -v m="$cap_mb" \
                'BEGIN { printf "  cap %3d MB/s  measured %8.1f MB/s  ratio %.3f\n", m, g/1e6, g/c
                         printf "FIGURE qos_cap_%d_accuracy %.3f -- measured ÷ io.max cap of %d MB/s\n", m, g/c, m }'
done

echo "bench_qos: cost of a cap (uncapped throughput with a very high io.max line vs none)"
none=() high=() ratios=()
for round in 1 2 3 4 5 6 7; do
        n=$(run "") h=$(run "rbps=1000000000000 wbps=1000000000000")
        none+=("$n") high+=("$h")
        ratios+=("$(awk -v n="$n" -v h="$h" 'BEGIN { printf "%.3f", h/n }')")
done
echo "  no line        $(mbs "$(median "${none[@]}")") (median of ${none[*]})"
echo "  rbps=1 TB/s    $(mbs "$(median "${high[@]}")") (median of ${high[*]})"
echo "  ratio capped / none, per back-to-back pair: ${ratios[*]}"
echo "  ratio capped / none (median of the pairs) $(median "${ratios[@]}")"
echo "FIGURE qos_uncapped_line_vs_none $(median "${ratios[@]}") -- throughput under an io.max line too high to bite ÷ none (the cost of a cap)"
[ "$dev" = /dev/nullb0 ] && rmmod null_blk 2>/dev/null || { losetup -d "$dev" 2>/dev/null || true; }
echo "PASS bench_qos" >>"${VM_RESULTS:-/dev/null}"
