#!/usr/bin/env bash
# Host side of the vm_node test (run by tests/vm/run.sh as --setup/--cleanup,
# inside the test's network namespace): a throwaway Ceph cluster bound to
# the tap's address, a least-privilege user, and the RBD images the guest
# stages. What the guest needs lands in $VM_SHARE (/vm in the guest):
#   gantry.key     the user's cephx key (node-stage secret userKey)
#   ceph.conf, admin.keyring   for `rbd resize` from the guest (expansion test)
#   env            MONITORS=host:port
#   mirrored       "IMAGE SIZE SHA256": a volume of a second cluster "capa"
#                  promoted into this one through a real rbd-mirror daemon
#                  by the gantry-csi controller (mirror_promote.py); capa and
#                  the daemon are gone again before the guest boots
#
#   node_cluster.sh start | stop
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../ceph/cluster.sh
dir=$VM_WORK/ceph
capa=$VM_WORK/capa
python=${GANTRY_PYTHON:-/usr/bin/python3}

# name:size_MB:data_pool ("-": none). The c* images are the concurrency test's.
IMAGES="data:256:ecdata blk:64:- rst:320:ecdata blank:64:- grow-ext4:128:ecdata
        grow-xfs:320:ecdata cond:64:- lock:64:- noopt:64:- crash:64:- orphan:64:-"
for i in $(seq -w 0 15); do IMAGES+=" c$i:48:ecdata"; done

# The rbd-mirror step: capa (1 OSD) -> this cluster, promoted by the controller.
mirror_promote() {
        local t0=$SECONDS
        mkdir -p "$VM_WORK/mirror"
        ln -sfn "$dir" "$VM_WORK/mirror/perf"
        ln -sfn "$capa" "$VM_WORK/mirror/capa"
        "$here/../ceph/mirror.sh" start "$VM_WORK/mirror"
        local rc=0
        "$python" "$here/mirror_promote.py" "$dir" "$capa" "$VM_HOST_IP" "$VM_SHARE" || rc=$?
        "$here/../ceph/mirror.sh" stop "$VM_WORK/mirror"
        "$cluster" purge "$capa" # the guest needs only the clone and its (non-primary) parent
        echo "node_cluster.sh: rbd-mirror step (daemon, promotion, teardown) took $((SECONDS - t0)) s"
        return $rc
}

start() {
        # capa boots beside this cluster: its waits overlap ours
        ADDR=$VM_HOST_IP "$cluster" start "$capa" 3400 1 1 >"$VM_WORK/capa.start.log" 2>&1 &
        local capa_pid=$!
        ADDR=$VM_HOST_IP "$cluster" start "$dir" 3300 3 2
        wait $capa_pid || { cat "$VM_WORK/capa.start.log" >&2; return 1; }
        (umask 077; "$cluster" user "$capa" gantry >"$capa/gantry.key")
        "$cluster" user "$dir" gantry >"$VM_SHARE/gantry.key"
        cp "$VM_SHARE/gantry.key" "$dir/gantry.key"
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
        mirror_promote
        echo "node_cluster.sh: $(timeout 60 rbd -c "$dir/ceph.conf" ls rbd | wc -l) images"
}

case ${1:?start|stop} in
start) start ;;
stop) [ ! -e "$capa/ceph.conf" ] || "$cluster" purge "$capa"
      [ ! -e "$dir/ceph.conf" ] || "$cluster" purge "$dir" ;;
*) echo "node_cluster.sh: start or stop" >&2; exit 2 ;;
esac
