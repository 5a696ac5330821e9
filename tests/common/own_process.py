"""Signals only what a test harness started (the Python twin of
own_pid.sh). A pid kept from earlier -- in a file, or after its process was
reaped -- may by now be a stranger's: before any signal, the pid is checked
to be still the process that was started, by its start time (field 22 of
/proc/PID/stat) and, when given, a word its command line must hold.

    rec = own_process.record(pid)          # "PID START", to keep in a file
    pid, start = own_process.parse(rec)
    own_process.is_own(pid, start, mark=None)
    own_process.signal_own(pid, start, sig, mark=None)      # True if sent
    own_process.signal_group(pgid, start, sig)   # killpg of a group we led
"""
import os


def _stat(pid):
    """Fields 3.. of /proc/@pid/stat (after the comm), or None when gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid):
    """Start time of @pid in clock ticks since boot, or None when it is gone."""
    rest = _stat(pid)
    return int(rest[19]) if rest else None  # field 22


def record(pid):
    """One line naming @pid and its start time, for a pid file."""
    return "%d %d" % (pid, start_time(pid) or 0)


def parse(line):
    """(pid, start) of a record() line; start is None for a bare pid."""
    f = line.split()
    return int(f[0]), (int(f[1]) if len(f) > 1 else None)


def is_own(pid, start, mark=None):
    """True when @pid still runs with start time @start (None: not checked)
    and, when @mark is given, a command line holding @mark."""
    if pid <= 1:
        return False
    rest = _stat(pid)
    # a zombie is past signalling (and its command line is empty)
    if not rest or rest[0] == "Z" or (start is not None and int(rest[19]) != start):
        return False
    if mark is not None:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ")
        except OSError:
            return False
        if mark.encode() not in cmd:
            return False
    return True


def signal_own(pid, start, sig, mark=None):
    """Sends @sig to @pid only when is_own(); True when sent."""
    if not is_own(pid, start, mark):
        return False
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def signal_group(pgid, start, sig):
    """Sends @sig to the process group @pgid that our process (pid @pgid,
    start time @start) led, even after that leader was reaped: its
    remaining members keep the number from reuse; when a live process has
    the number with another start time, the group is a stranger's and
    nothing is sent. True when sent."""
    now = start_time(pgid)
    if now is not None and start is not None and now != start:
        return False
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True
