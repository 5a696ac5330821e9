#!/usr/bin/env bash
# A throwaway real Ceph cluster for Gantry's tests and demo, from Debian's
# ceph packages: 1 mon, 1 mgr, N BlueStore OSDs on sparse files, cephx on,
# msgr2 only, bound to one address (127.0.0.1, or $ADDR inside a network
# namespace). Pools: replicated "rbd" (image metadata) and, with >= 3 OSDs,
# erasure-coded "ecdata" (k=2 m=1, failure domain osd, EC overwrites on).
# EC_KM=K+M picks another profile for "ecdata" (needs K+M OSDs); EC_KM=2+2
# on 5 OSDs stays readable and writable with one OSD down (min_size K+1).
#
#   cluster.sh start DIR PORT [NOSD=3] [OSD_GB=3]   boot, wait until clean, write DIR/env
#   cluster.sh wait  DIR                            until HEALTH_OK and every PG active+clean
#   cluster.sh stop  DIR                            stop every daemon (bounded), keep DIR
#   cluster.sh restart DIR                          start the daemons of a stopped DIR again, wait
#   cluster.sh osd-start DIR ID                     start osd.ID again (after a kill); no wait
#   cluster.sh purge DIR                            stop and remove DIR
#   cluster.sh user  DIR NAME                       create a least-privilege rbd user, print its key
#
# Everything (conf, keyrings, data, logs, pids) lives under DIR. Every wait
# is bounded; on a failed start every daemon started so far is stopped. A
# pid file outlives its daemon (a test kills OSDs): a daemon is signalled
# only while its pid is still that daemon (own_pid.sh: start time, and a
# command line naming this DIR's ceph.conf).
set -euo pipefail
. "$(dirname "$0")/../common/own_pid.sh"

cmd=${1:?usage: cluster.sh start|wait|stop|purge|user DIR ...}
dir=$(realpath -m "${2:?DIR}")
conf=$dir/ceph.conf
ADDR=${ADDR:-127.0.0.1}
WAIT_S=${CEPH_WAIT_S:-300}

ceph_cli() { timeout 60 ceph -c "$conf" --connect-timeout 20 "$@"; }

daemon() { # NAME BINARY ARGS...: start one daemon in the foreground under setsid
        local name=$1; shift
        setsid "$@" -f -c "$conf" >"$dir/log/$name.out" 2>&1 </dev/null &
        own_pid_write "$dir/run/$name.pid" $!
}

stop_all() { # TERM to all at once, then each waited for (bounded) and KILLed
        local p
        for p in "$dir"/run/*.pid; do
                [ -e "$p" ] || continue
                own_pid_signal TERM "$p" "$conf" || true
        done
        for p in "$dir"/run/*.pid; do
                [ -e "$p" ] || continue
                own_pid_stop "$p" "$conf"
        done
}

wait_clean() { # HEALTH_OK, and as many active+clean PGs as all pools have
        local deadline=$((SECONDS + WAIT_S)) want have
        while [ $SECONDS -lt $deadline ]; do
                want=$(ceph_cli osd pool ls detail -f json 2>/dev/null |
                        python3 -c 'import json,sys; print(sum(p["pg_num"] for p in json.load(sys.stdin)))' 2>/dev/null || echo -1)
                have=$(ceph_cli pg stat -f json 2>/dev/null |
                        python3 -c 'import json,sys
s=json.load(sys.stdin)["pg_summary"]
print(sum(x["num"] for x in s["num_pg_by_state"] if x["name"]=="active+clean"))' 2>/dev/null || echo -2)
                if [ "$want" = "$have" ] && ceph_cli health 2>/dev/null | grep -q HEALTH_OK; then
                        return 0
                fi
                sleep 1
        done
        echo "cluster.sh: $dir not clean after ${WAIT_S}s (see $dir/log)" >&2
        return 1
}

start() {
        local port=${1:?PORT} nosd=${2:-3} osd_gb=${3:-3} fsid monaddr i key uuid
        local ec_km=${EC_KM:-2+1} ec_k ec_m
        [[ $ec_km =~ ^([1-9])\+([1-9])$ ]] || { echo "cluster.sh: EC_KM: want K+M, e.g. 2+2" >&2; exit 2; }
        ec_k=${BASH_REMATCH[1]} ec_m=${BASH_REMATCH[2]}
        [ -e "$conf" ] && { echo "cluster.sh: $dir already holds a cluster" >&2; exit 1; }
        mkdir -p "$dir"/{mon,mgr/ceph-x,osd,run,log,crash}
        trap 'stop_all' ERR
        fsid=$(uuidgen)
        monaddr="v2:$ADDR:$port"
        cat >"$conf" <<CONF
[global]
fsid = $fsid
mon host = [$monaddr]
mon initial members = a
public addr = $ADDR
cluster addr = $ADDR
ms bind msgr1 = false
ms bind ipv6 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
auth allow insecure global id reclaim = false
run dir = $dir/run
crash dir = $dir/crash
osd pool default size = $(( nosd > 1 ? 2 : 1 ))
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 2
mon data avail crit = 1
mon osd reporter subtree level = osd
mon osd min down reporters = 1
mon cluster log file = $dir/log/cluster.log
mgr initial modules = iostat
[client.admin]
keyring = $dir/admin.keyring
[mon]
mon data = $dir/mon/\$cluster-\$id
log file = $dir/log/\$name.log
[mgr]
mgr data = $dir/mgr/\$cluster-\$id
log file = $dir/log/\$name.log
[osd]
osd data = $dir/osd/\$cluster-\$id
log file = $dir/log/\$name.log
osd objectstore = bluestore
bluestore block create = true
bluestore block size = $((osd_gb << 30))
osd memory target = 1073741824
osd memory cache min = 134217728
osd op num shards = 2
osd op num threads per shard = 1
debug rocksdb = 0/0
CONF
        ceph-authtool --create-keyring "$dir/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
        ceph-authtool --create-keyring "$dir/admin.keyring" --gen-key -n client.admin \
                --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
        ceph-authtool --create-keyring "$dir/mgr/ceph-x/keyring" --gen-key -n mgr.x \
                --cap mon 'allow profile mgr' --cap osd 'allow *' --cap mds 'allow *' >/dev/null
        ceph-authtool "$dir/mon.keyring" --import-keyring "$dir/admin.keyring" >/dev/null
        ceph-authtool "$dir/mon.keyring" --import-keyring "$dir/mgr/ceph-x/keyring" >/dev/null
        monmaptool --create --fsid "$fsid" --addv a "[$monaddr]" --enable-all-features \
                --set-min-mon-release 16 "$dir/monmap" >/dev/null
        ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/mon.keyring"
        daemon mon.a ceph-mon -i a
        daemon mgr.x ceph-mgr -i x
        local mkfs=()
        for i in $(seq 0 $((nosd - 1))); do
                uuid=$(uuidgen)
                key=$(ceph-authtool --gen-print-key)
                mkdir -p "$dir/osd/ceph-$i"
                echo "{\"cephx_secret\": \"$key\"}" | ceph_cli osd new "$uuid" "$i" -i - >/dev/null
                ceph-authtool --create-keyring "$dir/osd/ceph-$i/keyring" -n "osd.$i" --add-key "$key" >/dev/null
                ( ceph-osd -c "$conf" -i "$i" --mkfs --osd-uuid "$uuid" >"$dir/log/osd.$i.mkfs" 2>&1 &&
                  daemon "osd.$i" ceph-osd -i "$i" ) &
                mkfs+=($!)
        done
        for p in "${mkfs[@]}"; do wait "$p"; done
        local deadline=$((SECONDS + WAIT_S))
        until [ "$(ceph_cli osd stat -f json | python3 -c 'import json,sys; print(json.load(sys.stdin)["num_up_osds"])')" = "$nosd" ]; do
                [ $SECONDS -lt $deadline ] || { echo "cluster.sh: OSDs not up; see $dir/log" >&2; false; }
                sleep 1
        done
        ceph_cli osd set-require-min-compat-client mimic >/dev/null 2>&1 # clone v2
        ceph_cli osd pool create rbd 8 8 replicated >/dev/null 2>&1
        timeout 60 rbd -c "$conf" pool init rbd
        if [ "$nosd" -ge $((ec_k + ec_m)) ]; then
                ceph_cli osd erasure-code-profile set "ec$ec_k$ec_m" k=$ec_k m=$ec_m crush-failure-domain=osd
                ceph_cli osd pool create ecdata 8 8 erasure "ec$ec_k$ec_m" >/dev/null 2>&1
                ceph_cli osd pool set ecdata allow_ec_overwrites true >/dev/null 2>&1
                # k+1 keeps a write safe through one more loss; with m=1 that
                # is every shard, and one OSD down would stop all IO
                ceph_cli osd pool set ecdata min_size $((ec_m > 1 ? ec_k + 1 : ec_k)) >/dev/null 2>&1
                ceph_cli osd pool application enable ecdata rbd >/dev/null 2>&1
        fi
        wait_clean
        trap - ERR
        printf 'CEPH_CONF=%s\nCEPH_MON=%s:%s\n' "$conf" "$ADDR" "$port" >"$dir/env"
        echo "cluster.sh: $dir up: mon $ADDR:$port, $nosd OSDs, pools: $(ceph_cli osd pool ls | tr '\n' ' ')"
}

user() { # a least-privilege client for Gantry: what the docs recommend
        # Its key carries the secret canary (tests/canary/canary.py), so that
        # the canary check finds it in any log it leaks to; a second call
        # prints the key the user has.
        local name=${1:?NAME} key kr
        if key=$(ceph_cli auth get-key "client.$name" 2>/dev/null); then
                echo "$key"
                return
        fi
        key=$(python3 "$(dirname "$0")/../canary/canary.py" ceph-key)
        kr=$(mktemp "$dir/user.XXXXXX")
        ceph-authtool "$kr" -n "client.$name" --add-key "$key" --cap mon 'profile rbd' \
                --cap osd 'profile rbd pool=rbd, profile rbd pool=ecdata' \
                --cap mgr 'profile rbd pool=rbd' >/dev/null
        ceph_cli auth import -i "$kr" >/dev/null 2>&1
        rm -f "$kr"
        ceph_cli auth get-key "client.$name"
}

restart() { # the daemons of a stopped cluster, from what DIR keeps
        local p i
        [ -e "$conf" ] || { echo "cluster.sh: $dir holds no cluster" >&2; exit 1; }
        stop_all
        trap 'stop_all' ERR
        daemon mon.a ceph-mon -i a
        daemon mgr.x ceph-mgr -i x
        for p in "$dir"/osd/ceph-*; do
                i=${p##*-}
                daemon "osd.$i" ceph-osd -i "$i"
        done
        wait_clean
        trap - ERR
}

osd_start() { # one OSD of a running cluster, e.g. after a test killed it
        local i=${1:?ID}
        [ -d "$dir/osd/ceph-$i" ] || { echo "cluster.sh: $dir has no osd.$i" >&2; exit 1; }
        if own_pid "$dir/run/osd.$i.pid" "$conf" >/dev/null; then
                echo "cluster.sh: osd.$i is running" >&2
                exit 1
        fi
        daemon "osd.$i" ceph-osd -i "$i"
}

case $cmd in
start) shift 2; start "$@" ;;
restart) restart ;;
osd-start) osd_start "${3:-}" ;;
wait) wait_clean ;;
stop) stop_all ;;
purge) stop_all; rm -rf "$dir" ;;
user) user "${3:-}" ;;
*) echo "cluster.sh: unknown command $cmd" >&2; exit 2 ;;
esac
