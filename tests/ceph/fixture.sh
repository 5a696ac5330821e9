#!/usr/bin/env bash
# The CTest fixture of the `ceph` label: two throwaway clusters (cluster.sh)
# booted side by side, a least-privilege user on each, and a driver config
# naming both, for every test of the label to share.
#
#   fixture.sh setup   DIR   boot "perf" (port $GANTRY_CEPH_PORT, default 13300)
#                            and "capa" (port $GANTRY_CEPH_PORT2, default 13400),
#                            write DIR/gantry.json and DIR/<cluster>/gantry.key
#   fixture.sh cleanup DIR   stop both clusters and remove DIR
#
# A DIR left by an aborted run is purged first. On a failed setup whatever
# was started is stopped again.
set -euo pipefail

cmd=${1:?usage: fixture.sh setup|cleanup DIR}
dir=$(realpath -m "${2:?DIR}")
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster.sh
port1=${GANTRY_CEPH_PORT:-13300}
port2=${GANTRY_CEPH_PORT2:-13400}

cleanup() {
        for c in perf capa; do
                [ -d "$dir/$c" ] && bash "$cluster" purge "$dir/$c" || true
        done
        rm -rf "$dir"
}

setup() {
        cleanup
        local port
        for port in "$port1" "$port2"; do
                if ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
                        echo "fixture.sh: port $port is in use (another test run?); set" \
                                "GANTRY_CEPH_PORT / GANTRY_CEPH_PORT2 to free ports" >&2
                        exit 1
                fi
        done
        mkdir -p "$dir"
        trap 'cleanup' ERR
        # both at once: the second boot overlaps the first one's waits
        bash "$cluster" start "$dir/perf" "$port1" >"$dir/perf.start.log" 2>&1 &
        local p1=$!
        bash "$cluster" start "$dir/capa" "$port2" >"$dir/capa.start.log" 2>&1 &
        local p2=$! rc=0
        wait $p1 || rc=1
        wait $p2 || rc=1
        cat "$dir/perf.start.log" "$dir/capa.start.log"
        [ $rc = 0 ] || { echo "fixture.sh: a cluster did not start" >&2; false; }
        for c in perf capa; do
                (umask 077; bash "$cluster" user "$dir/$c" gantry >"$dir/$c/gantry.key")
                # a killed client's watches lapse after 10 s instead of 30: the crash
                # tests wait for that before the retry can clean up
                timeout 60 ceph -c "$dir/$c/ceph.conf" config set osd osd_client_watch_timeout 10
        done
        cat >"$dir/gantry.json" <<JSON
{
  "logLevel": "info",
  "clusters": [
    { "clusterID": "perf", "monitors": ["127.0.0.1:$port1"], "tier": "performance",
      "rbdTimeoutSeconds": 5, "userID": "gantry", "keyFile": "$dir/perf/gantry.key",
      "location": { "leaves": ["leaf-1"], "readGBps": 40 } },
    { "clusterID": "capa", "monitors": ["127.0.0.1:$port2"], "tier": "capacity",
      "rbdTimeoutSeconds": 5, "userID": "gantry", "keyFile": "$dir/capa/gantry.key" }
  ]
}
JSON
        trap - ERR
}

case $cmd in
setup) setup ;;
cleanup) cleanup ;;
*) echo "fixture.sh: unknown command $cmd" >&2; exit 2 ;;
esac
