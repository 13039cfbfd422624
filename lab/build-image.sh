#!/usr/bin/env bash
# Builds a lab host image locally, once: debootstrap -> podman import -> podman build.
# LAB_DISTRO picks the Debian release (bullseye, bookworm, trixie; bookworm by default);
# the image is localhost/rlinf-lab:<release>. Re-running is a no-op while the image
# exists and was built from the same inputs (this script, lab/Containerfile and what it
# copies: their digest is the image's rlinf.lab.inputs label); REBUILD=1 forces a rebuild.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
distro=${LAB_DISTRO:-bookworm}
case "$distro" in
  bullseye | bookworm | trixie) ;;
  *) echo "lab: LAB_DISTRO=$distro is not one of bullseye, bookworm, trixie" >&2; exit 2 ;;
esac
image=${LAB_IMAGE:-localhost/rlinf-lab:$distro}
base=localhost/rlinf-lab-base:$distro
mirror=${LAB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The same package names on all three releases (python3-venv pulls the release's
# python3.X-venv: 3.9, 3.11, 3.13).
packages=python3,python3-venv,python3-apt,openssh-server,iproute2,iputils-ping,systemd,systemd-sysv,dbus,sudo,rsync,ca-certificates,procps,ufw

inputs=$(cat "$0" "$here/Containerfile" "$here/ssh-host-keys.service" | { cat; echo "$distro $mirror"; } \
  | sha256sum | cut -c1-16)
built_from() { podman image inspect --format '{{index .Labels "rlinf.lab.inputs"}}' "$1" 2>/dev/null || true; }

if [[ -z "${REBUILD:-}" ]] && [[ "$(built_from "$image")" == "$inputs" ]]; then
  exit 0
fi

work=$(mktemp -d /var/tmp/rlinf-lab-rootfs.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [[ -n "${REBUILD:-}" ]] || [[ "$(built_from "$base")" != "$inputs" ]]; then
  echo "lab: debootstrap $distro (about a minute)"
  debootstrap --variant=minbase --include="$packages" \
    "$distro" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log"; exit 1; }
  rm -f "$work"/rootfs/etc/ssh/ssh_host_*
  : >"$work/rootfs/etc/machine-id"
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/lib/apt/lists/*
  tar -C "$work/rootfs" -cf "$work/rootfs.tar" .
  podman import -q --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' \
    --change "LABEL rlinf.lab.inputs=$inputs" \
    "$work/rootfs.tar" "$base" >/dev/null
fi
echo "lab: building $image"
podman build -q --build-arg "BASE=$base" --label "rlinf.lab.inputs=$inputs" -t "$image" -f "$here/Containerfile" "$here" >"$work/build.log" 2>&1 \
  || { cat "$work/build.log"; exit 1; }
