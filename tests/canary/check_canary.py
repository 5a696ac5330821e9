"""Fails (exit 1) when a secret shows in what a test run produced: the
canary string (canary.CANARY) or any registered secret value (each line of
16 bytes or more of the files in --values) in any file under the --logs
paths. Names each file and line, with the secret itself masked. Exit 0
with a count of what was searched otherwise.

  check_canary.py --logs DIR_OR_FILE [--logs ...] [--log-dir DIR ...] [--values DIR]

--logs searches every file under it; --log-dir only the files named *.log
under it (a folder that also holds kubeconfigs and token files, which are
meant to hold the secrets).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from canary import CANARY  # noqa: E402

MIN_VALUE = 16  # shorter lines of a registered value would match by chance


def values_from(d):
    vals = set()
    if d and os.path.isdir(d):
        for name in sorted(os.listdir(d)):
            with open(os.path.join(d, name), "rb") as f:
                for line in f.read().splitlines():
                    line = line.strip()
                    if len(line) >= MIN_VALUE:
                        vals.add(line)
    return vals


def files_under(paths, skip, suffix=""):
    for p in paths:
        if os.path.isfile(p):
            yield p
        elif os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs[:] = [x for x in dirs if os.path.abspath(os.path.join(root, x)) not in skip]
                for f in sorted(files):
                    if f.endswith(suffix):
                        yield os.path.join(root, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logs", action="append", default=[])
    ap.add_argument("--log-dir", action="append", default=[])
    ap.add_argument("--values")
    a = ap.parse_args()
    needles = [CANARY.encode()] + sorted(values_from(a.values))
    skip = {os.path.abspath(a.values)} if a.values else set()
    found, scanned = [], 0
    paths = list(files_under(a.logs, skip)) + list(files_under(a.log_dir, skip, ".log"))
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue  # removed while we walked: a test still running elsewhere
        scanned += 1
        for needle in needles:
            at = data.find(needle)
            if at < 0:
                continue
            lineno = data.count(b"\n", 0, at) + 1
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            line = data[start:end if end >= 0 else len(data)].replace(needle, b"<SECRET>")
            kind = "the canary" if needle == needles[0] else "a registered secret value"
            found.append("%s:%d: %s: %s" % (path, lineno, kind,
                                           line[:300].decode(errors="replace")))
    if found:
        print("secrets found in what the run logged:\n  " + "\n  ".join(found))
        return 1
    print("no secret in %d files (%d registered values and the canary searched)"
          % (scanned, len(needles) - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
