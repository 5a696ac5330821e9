#!/usr/bin/env bash
# Fetches Debian's own kernel for the VM tests and caches it, without
# installing it: `apt-get download` of the package linux-image-amd64 points
# at, then `dpkg-deb -x` into the cache and `depmod -b` there. This
# machine's kernel lacks krbd, configfs and nvme-fabrics; Debian's has them.
#
#   kernel.sh            print the cache directory of the kernel (fetch if needed)
#
# The cache is ${GANTRY_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/vm}/<kver>/
# and holds vmlinuz and root/lib/modules/<kver>/. It is keyed by the kernel
# version, so a newer Debian kernel lands beside the old one; a file lock
# makes concurrent runs (normal and ASan builds, other test suites) fetch once.
# Env: GANTRY_VM_KVER pins a version (e.g. 6.1.0-56-amd64) instead of asking apt,
# or is "backports": the newest linux-image-6.12.*+deb12-amd64 of the
# bookworm-backports suite, the first Debian kernel for bookworm built with
# NVMe in-band authentication (CONFIG_NVME_HOST_AUTH, CONFIG_NVME_TARGET_AUTH)
# that the DH-HMAC-CHAP test needs. The suite is added to apt's sources
# (same mirror as bookworm's) and its list fetched when apt knows none of it.
set -euo pipefail

cache=${GANTRY_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/vm}
mkdir -p "$cache"

kver=${GANTRY_VM_KVER:-}

# The backports kernel packages apt knows, newest first.
backports_kernels() {
        apt-cache madison 2>/dev/null $(apt-cache pkgnames linux-image-6.12 2>/dev/null |
                grep -E '^linux-image-6\.12\.[0-9]+\+deb12-amd64$') |
                awk -F' *[|] *' '$3 ~ /bookworm-backports/ {print $1}' | sort -V -r | uniq
}
if [ "$kver" = backports ]; then
        if [ -z "$(backports_kernels)" ]; then
                src=/etc/apt/sources.list.d/gantry-bookworm-backports.sources
                mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
                if [ ! -e "$src" ]; then
                        [ "$(id -u)" -eq 0 ] || { echo "kernel.sh: adding bookworm-backports to apt needs root" >&2; exit 1; }
                        printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
                                "${mirror:-http://deb.debian.org/debian}" >"$src"
                fi
                echo "kernel.sh: fetching the package list of bookworm-backports" >&2
                timeout 300 apt-get update -q -o Dir::Etc::sourcelist="$src" -o Dir::Etc::sourceparts=- \
                        -o APT::Get::List-Cleanup=0 >&2
        fi
        pkg=$(backports_kernels | head -1)
        [ -n "$pkg" ] || { echo "kernel.sh: bookworm-backports has no linux-image-6.12.*+deb12-amd64" >&2; exit 1; }
        kver=${pkg#linux-image-}
fi
if [ -z "$kver" ]; then
        pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
                awk '/Depends: linux-image-[0-9]/{print $2; exit}')
        [ -n "$pkg" ] || { echo "kernel.sh: apt-cache knows no linux-image-amd64 (run apt-get update)" >&2; exit 1; }
        kver=${pkg#linux-image-}
fi
dir=$cache/$kver

exec 9>"$cache/.lock"
flock -w 600 9 || { echo "kernel.sh: $cache/.lock held for 600 s" >&2; exit 1; }

if [ ! -e "$dir/.complete" ]; then
        tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
        chmod 755 "$tmp" # apt-get download drops to _apt when it can
        trap 'rm -rf "$tmp"' EXIT
        echo "kernel.sh: fetching linux-image-$kver into $dir" >&2
        ( cd "$tmp" && timeout 300 apt-get download -q "linux-image-$kver" >&2 )
        dpkg-deb -x "$tmp"/linux-image-"$kver"_*.deb "$tmp/root"
        cp "$tmp/root/boot/vmlinuz-$kver" "$tmp/vmlinuz"
        rm -rf "$tmp/root/boot" "$tmp"/*.deb
        depmod -b "$tmp/root" "$kver"
        rm -rf "$dir"
        mv "$tmp" "$dir"
        trap - EXIT
        touch "$dir/.complete"
fi
echo "$dir"
