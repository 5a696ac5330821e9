#!/usr/bin/env bash
# Builds the VM's initramfs: busybox-static, the closure of the kernel
# modules the tests need, and tests/vm/guest-init.sh as /init. Everything
# else the guest runs (python3, mkfs, gantry-csi) comes from the host's /
# shared read-only over 9p, so the initramfs stays small (~6 MB) and holds
# no copy of the project's binaries.
#
#   initramfs.sh KERNEL_DIR      print the path of the initramfs (build if needed)
#
# KERNEL_DIR is what kernel.sh printed. The result is cached there under a
# name that hashes this script, guest-init.sh and busybox, so editing either
# rebuilds it and concurrent runs share one copy (file lock).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kdir=$(realpath "${1:?usage: initramfs.sh KERNEL_DIR}")
kver=$(basename "$kdir")
modroot=$kdir/root

# What the tests need from the kernel. libceph's ms_mode=secure needs gcm,
# ghash and ctr; crc32c for ext4/xfs/libceph; virtio and 9p for the VM itself.
MODULES="rbd libceph
         nvme-tcp nvme-rdma nvme-fabrics nvmet nvmet-tcp configfs null_blk loop
         ext4 xfs overlay crc32c_generic crc32c-intel
         9p 9pnet_virtio virtio_pci virtio_net virtio_rng
         gcm ghash_generic ctr"

key=$(cat "$0" "$here/guest-init.sh" /bin/busybox | sha256sum | cut -c1-16)
out=$kdir/initramfs-$key.cpio.gz

exec 9>"$kdir/.initramfs.lock"
flock -w 300 9 || { echo "initramfs.sh: $kdir/.initramfs.lock held for 300 s" >&2; exit 1; }
if [ -s "$out" ]; then
        echo "$out"
        exit 0
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/gantry-initramfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT

# merged-/usr layout, as on the host
mkdir -p "$stage"/{usr/bin,usr/sbin,usr/lib,proc,sys,dev,run,tmp,host,newroot,etc,root}
ln -s usr/bin "$stage/bin"
ln -s usr/sbin "$stage/sbin"
ln -s usr/lib "$stage/lib"
cp /bin/busybox "$stage/usr/bin/busybox"
for applet in $(/bin/busybox --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$stage/usr/bin/$applet"
done
# the kernel's request_module() runs /sbin/modprobe
ln -sf ../bin/busybox "$stage/usr/sbin/modprobe"

for m in $MODULES; do
        modprobe -d "$modroot" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r ko; do
        rel=${ko#"$modroot"}
        mkdir -p "$stage/$(dirname "$rel")"
        cp "$ko" "$stage/$rel"
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
        cp "$modroot/lib/modules/$kver/$f" "$stage/lib/modules/$kver/"
done
depmod -b "$stage" "$kver"

echo 'root:x:0:0:root:/root:/bin/sh' >"$stage/etc/passwd"
install -m 0755 "$here/guest-init.sh" "$stage/init"

( cd "$stage" && find . | /bin/busybox cpio -o -H newc -R 0:0 2>/dev/null ) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
# builds for older versions of the scripts; an hour leaves runs in flight alone
find "$kdir" -maxdepth 1 -name 'initramfs-*.cpio.gz' ! -name "$(basename "$out")" -mmin +60 -delete
echo "$out"
