#!/usr/bin/env bash
# Where a backend's shortfall goes: a gang of four capped pods reading one
# dataset volume on a degraded, shared Ceph cluster, with every pod capped
# at its reservation (A) or at reservation x effective/reserved (B), phases
# alternating (shortfall_guest.py says how). The cluster is the
# vm_dataset_faults one (tests/vm/faults_cluster.sh: 5 OSDs, EC 2+2, a
# pattern image) in the run's network namespace; the guest asks its fault
# agent to kill an OSD.
#
#   bench_shortfall.sh   (GANTRY_SHORTFALL_PHASE_S, default 20;
#                         GANTRY_SHORTFALL_PAIRS, default 3; DS_MB, default 256)
#
# Needs root and qemu (exit 77 otherwise); run it under the machine's heavy
# lock like the vm label. Asserts nothing about time.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
vm=$(cd "$here/../../tests/vm" && pwd)
export DS_MB=${DS_MB:-256}
cd "$vm"
echo "bench_shortfall: image ${DS_MB} MiB; $(uptime)"
rc=0
"$vm/run.sh" --net 10.219.69 --name shortfall \
        --setup "$vm/faults_cluster.sh start" --cleanup "$vm/faults_cluster.sh stop" \
        --timeout 900 -- "${GANTRY_PYTHON:-python3}" "$here/shortfall_guest.py" || rc=$?
echo "bench_shortfall: done; $(uptime)"
exit $rc
