#!/usr/bin/env bash
# Runs inside the test VM (tests/vm/run.sh) on Debian's kernel: the node
# plugin's sampler (tests/usage/usage_probe, the real usage_sampler.c) over
# three pod cgroups laid out as kubelet's systemd driver makes them
# (kubepods.slice/kubepods[-QOS].slice/kubepods[-QOS]-pod<uid>.slice, the
# reader in a container scope below), each reading one null_blk device flat
# out: a Guaranteed pod capped at 40 MB/s and a Burstable one at 80 MB/s by
# io.max on the pod's slice, a BestEffort one with no cap. The measured
# rates of the capped pods must be within 10 % of their caps, their share
# at cap >= 80 %, their IO stall (io.pressure) >= 50 % of the window, and a
# BandwidthAtCap event logged for each; the uncapped pod is never "at cap".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../vm/lib.sh"
build=${GANTRY_BUILD_DIR:-build}
cg=/sys/fs/cgroup
work=$(mktemp -d)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
        wait 2>/dev/null
        rm -rf "$work"
}
trap cleanup EXIT

setup() {
        if [ "$(stat -fc %T $cg)" != cgroup2fs ]; then
                mount -t cgroup2 none $cg || return 1
        fi
        grep -qw io $cg/cgroup.controllers || { echo "no io controller"; return 1; }
        echo +io >$cg/cgroup.subtree_control &&
                modprobe null_blk nr_devices=1 gb=64 bs=4096 queue_mode=2 irqmode=0 &&
                vm_wait 10 test -b /dev/nullb0
}
vm_step "cgroup v2 with io, a null_blk device" setup || true
majmin=$(printf '%d:%d' "0x$(stat -c %t /dev/nullb0)" "0x$(stat -c %T /dev/nullb0)")

# pod DIR: the pod's slice under kubepods.slice; its reader runs in a scope below
pod() {
        local qos=$1 uid=$2 d=$cg/kubepods.slice
        mkdir -p "$d"
        echo +io >"$d/cgroup.subtree_control"
        if [ -n "$qos" ]; then
                d=$d/kubepods-$qos.slice
                mkdir -p "$d"
                echo +io >"$d/cgroup.subtree_control"
                d=$d/kubepods-$qos-pod${uid//-/_}.slice
        else
                d=$d/kubepods-pod${uid//-/_}.slice
        fi
        mkdir -p "$d/cri-containerd-reader.scope"
        echo "$d"
}
A=$(pod "" 0a1b2c3d-0000-4000-8000-00000000000a)
B=$(pod burstable 0a1b2c3d-0000-4000-8000-00000000000b)
C=$(pod besteffort 0a1b2c3d-0000-4000-8000-00000000000c)
echo "$majmin rbps=40000000" >"$A/io.max"
echo "$majmin rbps=80000000" >"$B/io.max"

for d in "$A" "$B" "$C"; do
        bash -c "echo \$\$ >$d/cri-containerd-reader.scope/cgroup.procs; exec dd if=/dev/nullb0 of=/dev/null bs=1M iflag=direct status=none" &
        pids+=($!)
done
reading() { for d in "$A" "$B" "$C"; do grep -q "^$majmin rbytes=[1-9]" "$d/io.stat" || return 1; done; }
vm_step "the three pods read" vm_wait 20 reading

# window 12 s, a pass every 2 s, 8 passes: the window is whole at the last
# ones (2 s intervals: io.max's throttling slices are far shorter)
IFS=: read -r maj min <<<"$majmin"
vm_step "the sampler reads the three pods" \
        "$build/tests/usage_probe" 12000 2000 8 \
        "a:$A:$maj:$min:40000000:40000000" "b:$B:$maj:$min:80000000:80000000" \
        "c:$C:$maj:$min:0:50000000" >"$work/metrics" 2>"$work/log"
cat "$work/metrics" | grep -E 'rate_bytes|at_cap_ratio|read_bytes_total|stall' | grep -v '^#'
cat "$work/log"

gauge() { # gauge METRIC POD -> value of its read series
        awk -v m="$1" -v p="pod=\"$2\"" 'index($0, m "{") == 1 && index($0, p) && (index($0, "direction=\"read\"") || m ~ /_total$/) { print $2; exit }' "$work/metrics"
}
within() { awk -v v="$1" -v c="$2" 'BEGIN { exit !(v >= 0.9 * c && v <= 1.1 * c) }'; }
atleast() { awk -v v="$1" -v c="$2" 'BEGIN { exit !(v >= c) }'; }

for p in a:40000000 b:80000000; do
        name=${p%%:*} cap=${p#*:}
        rate=$(gauge gantry_node_volume_rate_bytes_per_second "$name")
        share=$(gauge gantry_node_volume_at_cap_ratio "$name")
        echo "pod $name: rate $rate B/s for a cap of $cap, at cap $share of the window"
        vm_step "pod $name measured within 10 % of its cap" within "${rate:-0}" "$cap"
        vm_step "pod $name at its cap >= 80 % of the window" atleast "${share:-0}" 0.8
        vm_step "pod $name: a BandwidthAtCap event" grep -q "pod=$name volume=vol reason=BandwidthAtCap" "$work/log"
        # its reader waits on the throttle most of the time: io.pressure says so
        vm_step "pod $name stalled on IO most of the window" \
                atleast "$(awk -v p="pod=\"$name\"" 'index($0, "gantry_node_pod_io_stall_ratio{") == 1 && index($0, p) { print $2 }' "$work/metrics")" 0.5
done
share=$(gauge gantry_node_volume_at_cap_ratio c)
vm_step "the uncapped pod is never at cap" test "$share" = 0
vm_step "the uncapped pod's bytes are counted" atleast "$(gauge gantry_node_volume_read_bytes_total c)" 1
vm_finish
