#!/usr/bin/env bash
# Builds the lab host image locally, once: debootstrap -> podman import -> podman build.
# Re-running is a no-op while the image exists (REBUILD=1 forces a rebuild).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
image=${LAB_IMAGE:-localhost/rlinf-lab:bookworm}
base=localhost/rlinf-lab-base:bookworm
mirror=${LAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [[ -z "${REBUILD:-}" ]] && podman image exists "$image"; then
  exit 0
fi

work=$(mktemp -d /var/tmp/rlinf-lab-rootfs.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [[ -n "${REBUILD:-}" ]] || ! podman image exists "$base"; then
  echo "lab: debootstrap bookworm (about a minute)"
  debootstrap --variant=minbase \
    --include=python3,python3-venv,python3-apt,openssh-server,iproute2,iputils-ping,systemd,systemd-sysv,dbus,sudo,rsync,ca-certificates,procps \
    bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log"; exit 1; }
  rm -f "$work"/rootfs/etc/ssh/ssh_host_*
  : >"$work/rootfs/etc/machine-id"
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
  tar -C "$work/rootfs" -cf "$work/rootfs.tar" .
  podman import --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' \
    "$work/rootfs.tar" "$base" >/dev/null
fi
echo "lab: building $image"
podman build -q -t "$image" -f "$here/Containerfile" "$here" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
