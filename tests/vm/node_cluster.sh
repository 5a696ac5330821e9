#!/usr/bin/env bash
# Host side of the vm_node test (run by tests/vm/run.sh as --setup/--cleanup,
# inside the test's network namespace): a throwaway Ceph cluster bound to
# the tap's address, a least-privilege user, and the RBD images the guest
# stages. What the guest needs lands in $VM_SHARE (/vm in the guest):
#   gantry.key     the user's cephx key (node-stage secret userKey)
#   ceph.conf, admin.keyring   for `rbd resize` from the guest (expansion test)
#   env            MONITORS=host:port
#
#   node_cluster.sh start | stop
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../ceph/cluster.sh
dir=$VM_WORK/ceph

# name:size_MB:data_pool ("-": none). The c* images are the concurrency test's.
IMAGES="data:256:ecdata blk:64:- rst:320:ecdata blank:64:- grow-ext4:128:ecdata
        grow-xfs:320:ecdata cond:64:- lock:64:- noopt:64:- crash:64:- orphan:64:-"
for i in $(seq -w 0 15); do IMAGES+=" c$i:48:ecdata"; done

start() {
        ADDR=$VM_HOST_IP "$cluster" start "$dir" 3300 3 2
        "$cluster" user "$dir" gantry >"$VM_SHARE/gantry.key"
        cp "$dir/admin.keyring" "$VM_SHARE/admin.keyring"
        printf '[global]\nmon host = [v2:%s:3300]\nkeyring = /vm/admin.keyring\n' \
                "$VM_HOST_IP" >"$VM_SHARE/ceph.conf"
        printf 'MONITORS=%s:3300\n' "$VM_HOST_IP" >"$VM_SHARE/env"
        local spec name size pool pids=() p
        for spec in $IMAGES; do
                IFS=: read -r name size pool <<<"$spec"
                if [ "$pool" = - ]; then set --; else set -- --data-pool "$pool"; fi
                timeout 60 rbd -c "$dir/ceph.conf" create --size "$size" "$@" "rbd/$name" &
                pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p"; done
        echo "node_cluster.sh: $(timeout 60 rbd -c "$dir/ceph.conf" ls rbd | wc -l) images"
}

case ${1:?start|stop} in
start) start ;;
stop) [ ! -e "$dir/ceph.conf" ] || "$cluster" purge "$dir" ;;
*) echo "node_cluster.sh: start or stop" >&2; exit 2 ;;
esac
