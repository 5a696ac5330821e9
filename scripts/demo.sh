#!/usr/bin/env bash
# `make demo`: Gantry's main job on this machine, end to end, with a story
# and timings. Everything it starts it stops, also on failure or Ctrl-C, so
# it can be run again at once.
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
exec /usr/bin/python3 scripts/demo.py --build "$BUILD"
