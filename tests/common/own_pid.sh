# Signals only what a fixture started (source it from a test fixture).
# A pid file outlives its daemon: after a kill -9, or a crash, its number
# is free and a stranger may have it by the time the fixture stops. Before
# any signal, a PID read from a pid file is checked to be still the
# process that was started: its start time (field 22 of /proc/PID/stat,
# kept beside the pid file as PIDFILE.start) and, when given, a word its
# command line must hold (the daemon's config path, unique to the run).
# The pid file itself keeps only the number (others read it as such).
#
#   own_pid_write PIDFILE PID          record PID and its start time
#   own_pid PIDFILE [MARK]             print PID when it is still the one
#                                      started (and its cmdline holds MARK);
#                                      status 1 otherwise
#   own_pid_signal SIG PIDFILE [MARK]  kill -SIG only when own_pid says so
#   own_pid_stop PIDFILE [MARK] [GRACE_S=10]
#                                      TERM, wait up to GRACE_S, KILL; only
#                                      when own; removes PIDFILE(.start)

# own_pid_start_time PID: the process's start time in clock ticks since
# boot; status 1 when it is gone or a zombie (nothing left to signal)
own_pid_start_time() {
        local stat
        stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
        # comm (field 2) may hold spaces and parentheses: cut after the last ')'
        stat=${stat##*) }
        set -- $stat
        # field 3 (state) is now $1: start time, field 22, is $20
        [ "$1" != Z ] || return 1
        echo "${20}"
}

own_pid_write() {
        local pidfile=$1 pid=$2 start
        echo "$pid" >"$pidfile"
        if start=$(own_pid_start_time "$pid"); then
                echo "$start" >"$pidfile.start"
        else
                rm -f "$pidfile.start"
        fi
}

own_pid() {
        local pidfile=$1 mark=${2:-} pid start cmd
        pid=$(cat "$pidfile" 2>/dev/null) || return 1
        [[ $pid =~ ^[0-9]+$ ]] && [ "$pid" -gt 1 ] || return 1
        start=$(own_pid_start_time "$pid") || return 1
        if [ -e "$pidfile.start" ] && [ "$start" != "$(cat "$pidfile.start")" ]; then
                return 1
        fi
        if [ -n "$mark" ]; then
                cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
                [[ $cmd == *"$mark"* ]] || return 1
        fi
        echo "$pid"
}

own_pid_signal() {
        local sig=$1 pid
        pid=$(own_pid "$2" "${3:-}") || return 1
        kill "-$sig" "$pid" 2>/dev/null
}

own_pid_stop() {
        local pidfile=$1 mark=${2:-} grace=${3:-10} pid i
        if pid=$(own_pid "$pidfile" "$mark"); then
                kill -TERM "$pid" 2>/dev/null || true
                for ((i = 0; i < grace * 10; i++)); do
                        own_pid "$pidfile" "$mark" >/dev/null || break
                        sleep 0.1
                done
                own_pid_signal KILL "$pidfile" "$mark" || true
        fi
        rm -f "$pidfile" "$pidfile.start"
}
