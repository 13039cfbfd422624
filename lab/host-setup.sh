#!/usr/bin/env bash
# Installs what the lab needs on the controller machine (Debian 12, root):
# rootful podman with the runtime settings this kind of host needs, and debootstrap.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

packages=(podman runc netavark aardvark-dns containernetworking-plugins conmon
          iptables debootstrap rsync openssh-client python3-venv)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "lab: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

mkdir -p /etc/containers
if ! cmp -s "$here/containers.conf" /etc/containers/containers.conf; then
  install -m 0644 "$here/containers.conf" /etc/containers/containers.conf
  echo "lab: wrote /etc/containers/containers.conf"
fi
