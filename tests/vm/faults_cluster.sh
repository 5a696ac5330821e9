#!/usr/bin/env bash
# Host side of the vm_dataset_faults test and of bench/faults (run by
# tests/vm/run.sh as --setup/--cleanup, inside the run's network namespace):
# a throwaway Ceph cluster that stays readable with one OSD down (5 OSDs,
# EC 2+2 data pool: cluster.sh's EC_KM), one dataset image "ds" on it
# filled with a known pattern (dataset_pattern.py: every 4 KiB block carries
# its offset and a seed), a least-privilege user, and the fault agent
# (fault_agent.py) the guest asks for OSD faults. For the guest, in $VM_SHARE:
#   gantry.key   the user's cephx key (node-stage secret userKey)
#   env          MONITORS=host:port DS_BYTES=... DS_SEED=...
#   faults/      the agent's request queue
#
#   faults_cluster.sh start | stop      (DS_MB: the image's size, default 128)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../ceph/cluster.sh
. "$here/../common/own_pid.sh"
dir=$VM_WORK/ceph
agent_pid=$VM_WORK/fault_agent.pid
python=${GANTRY_PYTHON:-/usr/bin/python3}
ds_mb=${DS_MB:-128}

start() {
        EC_KM=2+2 ADDR=$VM_HOST_IP "$cluster" start "$dir" 3300 5 2
        "$cluster" user "$dir" gantry >"$VM_SHARE/gantry.key"
        local seed=$((RANDOM * 32768 + RANDOM)) t0=$SECONDS
        "$python" "$here/dataset_pattern.py" write $((ds_mb << 20)) "$seed" |
                timeout 300 rbd -c "$dir/ceph.conf" import --no-progress --data-pool ecdata - rbd/ds
        echo "faults_cluster.sh: ${ds_mb} MiB pattern (seed $seed) imported in $((SECONDS - t0)) s"
        printf 'MONITORS=%s:3300\nDS_BYTES=%d\nDS_SEED=%d\n' "$VM_HOST_IP" $((ds_mb << 20)) \
                "$seed" >"$VM_SHARE/env"
        # the import's writes settle before the healthy baseline is read
        "$cluster" wait "$dir"
        setsid "$python" "$here/fault_agent.py" "$dir" "$VM_SHARE" \
                >"$VM_WORK/fault_agent.log" 2>&1 </dev/null &
        own_pid_write "$agent_pid" $!
}

stop() {
        # the agent first: it continues an OSD it left stopped
        [ ! -e "$agent_pid" ] || own_pid_stop "$agent_pid" fault_agent.py
        [ ! -e "$VM_WORK/fault_agent.log" ] || sed 's/^/  /' "$VM_WORK/fault_agent.log"
        [ ! -e "$dir/ceph.conf" ] || "$cluster" purge "$dir"
}

case ${1:?start|stop} in
start) start ;;
stop) stop ;;
*) echo "faults_cluster.sh: start or stop" >&2; exit 2 ;;
esac
