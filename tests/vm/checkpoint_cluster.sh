#!/usr/bin/env bash
# Host side of the vm_checkpoint_snapshot test (tests/vm/run.sh --setup /
# --cleanup, inside the test's network namespace): a throwaway Ceph cluster
# on the tap's address, the durable tier the guest's gantry-targets drain
# into, and a least-privilege user. For the guest, in $VM_SHARE (/vm):
#   gantry.key   the user's cephx key (targets' keyFile, node-stage secret)
#   env          MONITORS=host:port
#
#   checkpoint_cluster.sh start | stop
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../ceph/cluster.sh
dir=$VM_WORK/ceph

case ${1:?start|stop} in
start)
        ADDR=$VM_HOST_IP "$cluster" start "$dir" 3300 3 2
        "$cluster" user "$dir" gantry >"$VM_SHARE/gantry.key"
        printf 'MONITORS=%s:3300\n' "$VM_HOST_IP" >"$VM_SHARE/env"
        ;;
stop) [ ! -e "$dir/ceph.conf" ] || "$cluster" purge "$dir" ;;
*) echo "checkpoint_cluster.sh: start or stop" >&2; exit 2 ;;
esac
