#!/usr/bin/env bash
# The harness's own test, run in the guest by run.sh (CTest: vm_harness):
# the parts other VM tests rely on are there and work.
#   selftest.sh BUILD_DIR
set -uo pipefail
. "$(dirname "$0")/lib.sh"
build=${1:?BUILD_DIR}

host_tree() { [ -x "$build/bin/gantry-csi" ] && "$build/bin/gantry-csi" --version; }
overlay_writable() {
        mkdir -p /var/lib/kubelet/plugins/x && echo ok >/var/lib/kubelet/plugins/x/f &&
                grep -q ok /var/lib/kubelet/plugins/x/f
}
share_from_setup() { grep -qx "hello from setup" /vm/hello; }
modules() {
        modprobe -a rbd nvme-tcp nvme-fabrics nvmet nvmet-tcp null_blk loop xfs ext4 gcm ctr || return 1
        [ -e /sys/bus/rbd/add_single_major ] && [ -d /sys/kernel/config/nvmet ] &&
                [ -c /dev/nvme-fabrics ] && grep -qw xfs /proc/filesystems
}
loop_xfs() {
        local dev
        truncate -s 320M /tmp/xfs.img && dev=$(losetup -f --show /tmp/xfs.img) || return 1
        mkfs.xfs -q "$dev" && mkdir -p /mnt/x && mount "$dev" /mnt/x &&
                echo data >/mnt/x/f && umount /mnt/x
        local r=$?
        losetup -d "$dev"
        return $r
}
network() { [ -n "${VM_HOST_IP:-}" ] && vm_wait 20 busybox ping -c1 -W1 "$VM_HOST_IP" >/dev/null; }
env_passed() { [ "${GANTRY_VM_SELFTEST:-}" = "a b" ]; }

vm_step "host tree runs over 9p" host_tree
vm_step "overlay is writable" overlay_writable
vm_step "share carries setup's files" share_from_setup
vm_step "GANTRY_* environment passed" env_passed
vm_step "modules load (rbd nvmet nvme-tcp xfs)" modules
vm_step "loop device + xfs mount" loop_xfs
vm_step "tap network reaches the host side" network
vm_finish
