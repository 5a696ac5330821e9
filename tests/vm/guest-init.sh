#!/bin/sh
# /init of the test VM (busybox). It turns the host's / (9p, read-only) into
# a writable root with an overlay on a tmpfs, chroots into it and runs the
# test the runner (run.sh) left in the shared directory as /vm/guest.sh.
# The script's exit status goes to /vm/status; then the VM powers off.
#
# Kernel command line, set by run.sh:
#   gantry.ip=ADDR/PREFIX   address of eth0 (only with a tap); lo is always up
#
# Inside the chroot: the host's binaries and libraries run unchanged, the
# guest's kernel modules are at /lib/modules/$(uname -r) (so the host's
# modprobe works), configfs is at /sys/kernel/config, /tmp and /run are
# tmpfs (with the caller's trees under the host's /tmp bound back), and /vm
# is the runner's shared directory (read-write).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
echo /sbin/modprobe >/proc/sys/kernel/modprobe
hostname gantry-vm

say() { echo "gantry-vm: $*"; }
halt() { sync; poweroff -f; }

ip_arg=
for a in $(cat /proc/cmdline); do
        case $a in gantry.ip=*) ip_arg=${a#gantry.ip=} ;; esac
done

modprobe -a virtio_pci virtio_net virtio_rng 9pnet_virtio 9p overlay configfs ||
        say "modprobe of the base modules failed"
mount -t configfs configfs /sys/kernel/config

# The share carries the test and takes its results back: mount it first, so
# that every later failure can still be reported through it.
mkdir -p /vm
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 vmshare /vm; then
        say "cannot mount the shared directory"
        halt
fi
fail() { say "$*"; echo 125 >/vm/status; halt; }

# A 9p tag mounts once: the read-only host root is the overlay's lower layer.
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro host /host ||
        fail "cannot mount the host's root over 9p"
mkdir -p /run/ovl && mount -t tmpfs tmpfs /run/ovl && mkdir -p /run/ovl/upper /run/ovl/work ||
        fail "cannot make the overlay's upper layer"
mount -t overlay overlay -o lowerdir=/host,upperdir=/run/ovl/upper,workdir=/run/ovl/work /newroot ||
        fail "cannot mount the overlay"

r=/newroot
for d in proc sys dev; do
        mount --rbind /$d $r/$d || fail "cannot bind /$d"
done
mount --make-rslave $r/sys
# /tmp is a tmpfs, as on a host (nvmet's file backing wants one). A checkout
# or build tree under the host's /tmp (CI may clone there) is bound back from
# the overlay: run.sh lists those top-level directories in /vm/tmp-binds.
mkdir -p /run/hosttmp && mount --bind $r/tmp /run/hosttmp || fail "cannot keep the host's /tmp"
mount -t tmpfs tmpfs $r/tmp
if [ -r /vm/tmp-binds ]; then
        while read -r d; do
                [ -n "$d" ] || continue
                mkdir -p "$r/tmp/$d" && mount --bind "/run/hosttmp/$d" "$r/tmp/$d" ||
                        fail "cannot bind /tmp/$d"
        done </vm/tmp-binds
fi
mount -t tmpfs tmpfs $r/run
mkdir -p $r/dev/pts $r/dev/shm $r/vm
mount -t devpts devpts $r/dev/pts
mount -t tmpfs tmpfs $r/dev/shm
mount --bind /vm $r/vm || fail "cannot bind /vm"
kver=$(uname -r)
mkdir -p $r/usr/lib/modules/$kver && mount --bind /lib/modules/$kver $r/usr/lib/modules/$kver ||
        fail "cannot bind the kernel modules"
# mounts made by the test (stage, publish) propagate like on a kubelet host
mount --make-rshared $r

ip link set lo up
if [ -n "$ip_arg" ]; then
        i=0
        while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
        ip addr add "$ip_arg" dev eth0 && ip link set eth0 up || fail "cannot bring eth0 up"
fi

[ -r /vm/guest.sh ] || fail "no /vm/guest.sh"
say "running the test (kernel $kver)"
chroot $r /bin/sh /vm/guest.sh </dev/null
echo $? >/vm/status
say "test exited $(cat /vm/status)"
halt
