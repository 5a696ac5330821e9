#!/usr/bin/env bash
# Dataset reads under storage faults: the vm_dataset_faults scenario
# (tests/vm/test_dataset_faults.py: pods in kubelet-shaped cgroups read a
# ROX krbd volume on 5 OSDs, EC 2+2, every byte checked, through a kill -9,
# a SIGSTOP until marked down, and an osd out with recovery) with longer
# steady phases and a larger image, for its figures: read rate and
# p50/p99/p99.9 per phase as ratios to the healthy phase of the same run,
# the stall of a crash and of a hang (the longest read), the degraded read
# rate against the seeds' ~85 % claim, read errors and wrong bytes.
#
#   bench_faults.sh        (GANTRY_FAULTS_PHASE_S, default 20; DS_MB, default 256)
#
# Needs root and qemu (exit 77 otherwise); run it under the machine's heavy
# lock like the vm label. Asserts nothing about time: the test's own checks
# (0 errors, 0 wrong bytes, reads in every phase) decide the exit status.
set -euo pipefail

vm=$(cd "$(dirname "$0")/../../tests/vm" && pwd)
export GANTRY_FAULTS_PHASE_S=${GANTRY_FAULTS_PHASE_S:-20}
export DS_MB=${DS_MB:-256}
cd "$vm"
echo "bench_faults: steady phases ${GANTRY_FAULTS_PHASE_S} s, image ${DS_MB} MiB; $(uptime)"
rc=0
"$vm/run.sh" --net 10.219.68 --name faults-bench \
        --setup "$vm/faults_cluster.sh start" --cleanup "$vm/faults_cluster.sh stop" \
        --timeout 1500 -- "${GANTRY_PYTHON:-python3}" "$vm/vmresult.py" test_dataset_faults || rc=$?
echo "bench_faults: done; $(uptime)"
exit $rc
