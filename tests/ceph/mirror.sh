#!/usr/bin/env bash
# A real rbd-mirror daemon between the fixture's two clusters (fixture.sh),
# one way: images of capa's pool "rbd" are mirrored into perf's pool "rbd"
# (the daemon runs against perf, its peer is capa). Only the tests that need
# it start it; they stop it again.
#
#   mirror.sh start DIR   pool mirror mode "image" on both sides, capa
#                         bootstrapped as perf's rx-only peer, a cephx user
#                         for the daemon, the daemon started; returns once
#                         the daemon's admin socket shows it leading a
#                         running replayer of pool "rbd"
#   mirror.sh stop  DIR   stop the daemon (bounded); the pool setup stays
#
# Layout: rbd-mirror replicates a pool into the pool of the same name on the
# peer, and an image's EC data pool into the data pool of the same name when
# the destination has one: both fixture clusters have "rbd" and "ecdata".
# The daemon's pid lives in DIR/perf/run, so `cluster.sh stop|purge` of perf
# stops it too if a test died before its own stop.
set -euo pipefail
. "$(dirname "$0")/../common/own_pid.sh"

cmd=${1:?usage: mirror.sh start|stop DIR}
dir=$(realpath -m "${2:?DIR}")
perf=$dir/perf
capa=$dir/capa
pidfile=$perf/run/rbd-mirror.pid
# the daemon's admin sockets live in a short directory of their own: a unix
# socket path must stay under 108 bytes, whatever DIR is
rundir_file=$perf/rbd-mirror.rundir
WAIT_S=${MIRROR_WAIT_S:-90}

rbd_on() { local c=$1; shift; timeout 60 rbd -c "$c/ceph.conf" "$@"; }

peer_count() {
        rbd_on "$perf" mirror pool info rbd --format json |
                python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("peers", [])))'
}

daemon_ready() { # this very daemon (its own admin socket) leads a running pool replayer
        local asok
        asok=$(ls "$(cat "$rundir_file")"/rbd-mirror-*."$(cat "$pidfile")".*.asok 2>/dev/null |
                head -n 1)
        [ -n "$asok" ] || return 1
        timeout 10 ceph --admin-daemon "$asok" rbd mirror status 2>/dev/null |
                python3 -c 'import json,sys
s=json.load(sys.stdin)
ok=[p for p in s.get("pool_replayers", []) if p.get("pool")=="rbd" and p.get("state")=="running" and p.get("leader")]
sys.exit(0 if ok else 1)'
}

stop() { # only the daemon this fixture started (a pid file outlives it)
        [ ! -e "$pidfile" ] || own_pid_stop "$pidfile" "$perf/rbd-mirror.conf"
        if [ -e "$rundir_file" ]; then
                rm -rf "$(cat "$rundir_file")"
                rm -f "$rundir_file"
        fi
}

start() {
        [ -e "$perf/ceph.conf" ] && [ -e "$capa/ceph.conf" ] ||
                { echo "mirror.sh: no fixture clusters in $dir" >&2; exit 1; }
        stop
        rbd_on "$capa" mirror pool enable rbd image --site-name capa
        rbd_on "$perf" mirror pool enable rbd image --site-name perf
        if [ "$(peer_count)" = 0 ]; then
                (umask 077
                 rbd_on "$capa" mirror pool peer bootstrap create --site-name capa rbd >"$dir/mirror.token"
                 rbd_on "$perf" mirror pool peer bootstrap import --site-name perf \
                         --direction rx-only rbd "$dir/mirror.token")
                rm -f "$dir/mirror.token"
        fi
        timeout 60 ceph -c "$perf/ceph.conf" auth get-or-create client.rbd-mirror.gantry \
                mon 'profile rbd-mirror' osd 'profile rbd' -o "$perf/rbd-mirror.keyring"
        local rundir
        rundir=$(mktemp -d "${TMPDIR:-/tmp}/gantry-rbdm.XXXXXX")
        echo "$rundir" >"$rundir_file"
        # the daemon opens its own connections from $CEPH_CONF: one file with its key
        { cat "$perf/ceph.conf"
          printf '[client.rbd-mirror.gantry]\nkeyring = %s\nlog file = %s\nrun dir = %s\n' \
                "$perf/rbd-mirror.keyring" "$perf/log/rbd-mirror.log" "$rundir"
        } >"$perf/rbd-mirror.conf"
        CEPH_CONF=$perf/rbd-mirror.conf setsid rbd-mirror -f -c "$perf/rbd-mirror.conf" \
                --id rbd-mirror.gantry >"$perf/log/rbd-mirror.out" 2>&1 </dev/null &
        own_pid_write "$pidfile" $!
        local deadline=$((SECONDS + WAIT_S))
        until daemon_ready; do
                if [ $SECONDS -ge $deadline ] || ! own_pid "$pidfile" >/dev/null; then
                        echo "mirror.sh: rbd-mirror not healthy after ${WAIT_S}s:" >&2
                        rbd_on "$perf" mirror pool status rbd --verbose >&2 || true
                        tail -n 20 "$perf/log/rbd-mirror.out" >&2 || true
                        stop
                        exit 1
                fi
                sleep 1
        done
        echo "mirror.sh: rbd-mirror up (pid $(cat "$pidfile")), capa/rbd -> perf/rbd"
}

case $cmd in
start) start ;;
stop) stop ;;
*) echo "mirror.sh: unknown command $cmd" >&2; exit 2 ;;
esac
