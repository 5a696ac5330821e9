#!/usr/bin/env bash
# Runs a test inside a qemu VM on Debian's kernel, for the paths this
# machine's kernel cannot take (krbd, configfs/nvmet, NVMe/TCP, mounts).
#
#   run.sh [options] [--] COMMAND [ARG...]
#
# COMMAND runs as root in the guest, chrooted into the host's / (9p,
# read-only, with a tmpfs overlay on top), in the current directory, so
# host binaries and build trees run unchanged. Options:
#   --net A.B.C        make a network namespace with a tap device: the host
#                      side is A.B.C.1/24 on the tap, the guest A.B.C.2/24 on
#                      eth0. Nothing else is in the namespace (no route out).
#   --name NAME        part of the namespace's name: gantry-NAME-PID (default vm)
#   --setup CMD        host-side bash command run (inside the namespace with
#                      --net) before the VM boots; non-zero exit fails the run
#   --cleanup CMD      host-side bash command run on any exit (bounded)
#   --env NAME=VALUE   set in the guest (repeatable); GANTRY_* variables of the
#                      caller's environment are passed on as well
#   --timeout S        whole-VM bound (default 600); timeout is qemu's parent
#   --mem MB --smp N   guest size (default 2048, 2)
#
# The setup and cleanup commands and the guest see:
#   VM_SHARE     a directory shared read-write with the guest (there: /vm);
#                drop files for the guest into it (keys: never on a command line)
#   VM_WORK      the run's private work directory (host only; VM_SHARE is in it)
#   VM_NS, VM_HOST_IP, VM_GUEST_IP   with --net
#   VM_RESULTS   (guest) append "PASS name" / "FAIL name" lines here; lib.sh's
#                vm_step does it for shell tests, vmresult.py for unittest
#
# Exit status: 0 when the guest command exited 0 and no FAIL line was
# written; 1 otherwise; 77 (CTest's skip) when qemu or root is missing.
# The last line printed is "vm: N passed, M failed". Everything the run made
# (namespace, tap, VM, work directory) is removed on any exit; set
# GANTRY_VM_KEEP=1 to keep the work directory for a post-mortem.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
net= name=vm setup= cleanup= timeout_s=600 mem=2048 smp=2
guest_env=()
while [ $# -gt 0 ]; do
        case $1 in
        --net) net=${2:?--net A.B.C}; shift 2 ;;
        --name) name=${2:?--name NAME}; shift 2 ;;
        --setup) setup=${2:?--setup CMD}; shift 2 ;;
        --cleanup) cleanup=${2:?--cleanup CMD}; shift 2 ;;
        --env) guest_env+=("${2:?--env NAME=VALUE}"); shift 2 ;;
        --timeout) timeout_s=${2:?--timeout S}; shift 2 ;;
        --mem) mem=${2:?--mem MB}; shift 2 ;;
        --smp) smp=${2:?--smp N}; shift 2 ;;
        --) shift; break ;;
        -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
        esac
done
[ $# -gt 0 ] || { echo "usage: run.sh [options] [--] COMMAND [ARG...]" >&2; exit 2; }
if [ -n "$net" ] && ! [[ $net =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]]; then
        echo "run.sh: --net: want the first three octets of a /24, e.g. 10.77.41" >&2
        exit 2
fi
if [ "$(id -u)" -ne 0 ] || ! command -v qemu-system-x86_64 >/dev/null; then
        echo "run.sh: needs root and qemu-system-x86_64; skipped"
        echo "vm: 0 passed, 0 failed"
        exit 77
fi

kdir=$("$here/kernel.sh")
initrd=$("$here/initramfs.sh" "$kdir")

work=$(mktemp -d "${TMPDIR:-/tmp}/gantry-vm-$name-$$.XXXXXX")
share=$work/share
mkdir -p "$share"
chmod 755 "$work" "$share"
ns= tap= qpid=
export VM_SHARE=$share VM_WORK=$work

teardown() {
        local rc=$?
        trap - EXIT INT TERM HUP
        if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
                kill "$qpid" 2>/dev/null || true
                wait "$qpid" 2>/dev/null || true
        fi
        if [ -n "$cleanup" ]; then
                if [ -n "$ns" ]; then
                        timeout 120 ip netns exec "$ns" bash -c "$cleanup" || true
                else
                        timeout 120 bash -c "$cleanup" || true
                fi
        fi
        if [ -n "$ns" ]; then
                # whatever the setup left running in our namespace is ours
                local pids
                pids=$(ip netns pids "$ns" 2>/dev/null || true)
                [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
                ip netns del "$ns" 2>/dev/null || true
        fi
        if [ "${GANTRY_VM_KEEP:-0}" = 1 ]; then
                echo "run.sh: kept $work"
        else
                rm -rf "$work"
        fi
        exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

in_ns=()
if [ -n "$net" ]; then
        ns=gantry-$name-$$
        tap=gvt$$
        export VM_NS=$ns VM_HOST_IP=$net.1 VM_GUEST_IP=$net.2
        ip netns add "$ns"
        in_ns=(ip netns exec "$ns")
        "${in_ns[@]}" ip link set lo up
        "${in_ns[@]}" ip tuntap add dev "$tap" mode tap
        "${in_ns[@]}" ip addr add "$VM_HOST_IP/24" dev "$tap"
        "${in_ns[@]}" ip link set "$tap" up
fi

if [ -n "$setup" ]; then
        if ! "${in_ns[@]}" bash -c "$setup"; then
                echo "run.sh: setup failed: $setup"
                echo "vm: 0 passed, 1 failed"
                exit 1
        fi
fi

# The guest's script: the environment, the directory, then the command.
{
        echo "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        echo "export HOME=/root VM_RESULTS=/vm/results PYTHONDONTWRITEBYTECODE=1"
        [ -z "$net" ] || printf 'export VM_HOST_IP=%q VM_GUEST_IP=%q\n' "$VM_HOST_IP" "$VM_GUEST_IP"
        while IFS='=' read -r k v; do
                printf 'export %s=%q\n' "$k" "$v"
        done < <(env | grep -E '^GANTRY_[A-Za-z0-9_]*=' | grep -v '^GANTRY_VM_KEEP=' || true)
        for kv in "${guest_env[@]}"; do
                printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"
        done
        printf 'cd %q || exit 125\n' "$PWD"
        printf 'exec'
        printf ' %q' "$@"
        printf '\n'
} >"$share/guest.sh"
# Trees under the host's /tmp that the guest must see through its own /tmp
# tmpfs: the directory the command runs in and the build tree.
for p in "$PWD" "${GANTRY_BUILD_DIR:-}"; do
        case $p in /tmp/?*) p=${p#/tmp/}; echo "${p%%/*}" ;; esac
done | sort -u >"$share/tmp-binds"
: >"$share/results"

accel=(-accel tcg,thread=multi -cpu max)
# KVM only when this kernel really boots under it. Two nested-hypervisor
# failures are known: qemu aborts at vCPU reset ("failed to set MSR
# 0x10a"), or the vCPU starts and the guest hangs for ever right after
# the real-mode setup code ("Probing EDD"), with no error. The probe
# boots the kernel itself without an initramfs (it panics at once looking
# for a root, and -no-reboot ends qemu) and waits up to 20 s for the
# decompressed kernel's banner; the answer is kept for the host's boot
# and this kernel, so only the first run of a boot pays for it (~1 s where
# KVM works). GANTRY_VM_ACCEL=tcg forces software emulation.
kvm_probe() {
        echo quit | timeout 20 qemu-system-x86_64 -accel kvm -cpu host -m 64 -display none \
                -nodefaults -S -monitor stdio >/dev/null 2>&1 || return 1
        timeout -k 5 20 qemu-system-x86_64 -accel kvm -cpu host -m 256 -smp 1 \
                -display none -monitor none -serial stdio -no-reboot -nic none \
                -kernel "$kdir/vmlinuz" -append "console=ttyS0 earlyprintk=serial panic=-1" \
                </dev/null 2>/dev/null | grep -q -m1 'Linux version'
}
if [ -w /dev/kvm ] && [ "${GANTRY_VM_ACCEL:-}" != tcg ]; then
        probe_file="$(dirname "$kdir")/kvm-probe-$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)-$(basename "$kdir")"
        if [ ! -s "$probe_file" ]; then
                if kvm_probe; then echo kvm; else echo tcg; fi >"$probe_file.$$"
                mv -f "$probe_file.$$" "$probe_file"
        fi
        if [ "$(cat "$probe_file")" = kvm ]; then
                accel=(-accel kvm -cpu host)
        else
                echo "run.sh: /dev/kvm is present but this kernel does not boot under KVM here: using TCG"
        fi
fi
# no_timer_check: under software emulation on a loaded host the kernel's
# IO-APIC timer check can miss its window and panic at boot ("IO-APIC +
# timer doesn't work"); the check proves nothing about what we test.
append="console=ttyS0 panic=-1 quiet loglevel=4 no_timer_check"
netdev=(-nic none)
if [ -n "$net" ]; then
        append+=" gantry.ip=$VM_GUEST_IP/24"
        netdev=(-netdev "tap,id=n0,ifname=$tap,script=no,downscript=no" -device virtio-net-pci,netdev=n0)
fi

echo "run.sh: booting $(basename "$kdir") (${ns:-no network}), timeout ${timeout_s}s: $*"
# timeout must be qemu's direct parent (ip netns exec execs it), or a
# timed-out qemu lives on.
"${in_ns[@]}" timeout -k 10 "$timeout_s" qemu-system-x86_64 "${accel[@]}" -m "$mem" -smp "$smp" \
        -display none -monitor none -serial stdio -no-reboot "${netdev[@]}" \
        -device virtio-rng-pci \
        -virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap" \
        -virtfs "local,path=$share,mount_tag=vmshare,security_model=none" \
        -kernel "$kdir/vmlinuz" -initrd "$initrd" -append "$append" </dev/null &
qpid=$!
qrc=0
wait "$qpid" || qrc=$?
qpid=

status=$(cat "$share/status" 2>/dev/null || echo none)
passed=$(grep -c '^PASS ' "$share/results" || true)
failed=$(grep -c '^FAIL ' "$share/results" || true)
[ "$qrc" -eq 124 ] && echo "run.sh: the VM timed out after ${timeout_s}s"
[ "$qrc" -eq 0 ] || [ "$qrc" -eq 124 ] || echo "run.sh: qemu exited $qrc"
if [ "$status" != 0 ]; then
        echo "run.sh: the guest command exited ${status}"
        [ "$failed" -gt 0 ] || failed=1
elif [ "$passed" -eq 0 ] && [ "$failed" -eq 0 ]; then
        passed=1 # a command that reports no steps is one test
fi
grep '^FAIL ' "$share/results" || true
echo "vm: $passed passed, $failed failed"
[ "$status" = 0 ] && [ "$failed" -eq 0 ]
