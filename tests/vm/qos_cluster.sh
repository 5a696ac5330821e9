#!/usr/bin/env bash
# Host side of the vm_qos test (run by tests/vm/run.sh as --setup/--cleanup,
# inside the test's network namespace): a throwaway 1-OSD Ceph cluster bound
# to the tap's address, a least-privilege user and the one image the guest
# publishes to several pods. What the guest needs lands in $VM_SHARE:
#   gantry.key   the user's cephx key (node-stage secret userKey)
#   env          MONITORS=host:port
#
#   qos_cluster.sh start | stop
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../ceph/cluster.sh
dir=$VM_WORK/ceph

case ${1:?start|stop} in
start)
        ADDR=$VM_HOST_IP "$cluster" start "$dir" 3300 1 2
        "$cluster" user "$dir" gantry >"$VM_SHARE/gantry.key"
        printf 'MONITORS=%s:3300\n' "$VM_HOST_IP" >"$VM_SHARE/env"
        timeout 60 rbd -c "$dir/ceph.conf" create --size 512 rbd/bw
        # data to read (an unwritten object reads as zeros without a disk read)
        timeout 120 rbd -c "$dir/ceph.conf" bench --io-type write --io-size 4M \
                --io-total 512M --io-pattern seq rbd/bw >/dev/null
        ;;
stop) [ ! -e "$dir/ceph.conf" ] || "$cluster" purge "$dir" ;;
*) echo "qos_cluster.sh: start or stop" >&2; exit 2 ;;
esac
