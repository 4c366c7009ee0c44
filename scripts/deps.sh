#!/bin/bash
# deps.sh — install the Debian packages lfs needs to build, test and
# benchmark (only those not installed yet).
set -euo pipefail
pkgs=(build-essential autoconf automake libtool pkg-config libfuse3-dev fuse3 zlib1g-dev libblkid-dev check libaio-dev liburing-dev
      fio fuse2fs e2fsprogs python3 git gnuplot-nox util-linux procps psmisc acl attr
      strace xz-utils systemd logrotate nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils libnfs-dev \
      debhelper dpkg-dev lintian \
      clang libclang-rt-14-dev) # libFuzzer, for scripts/fuzz.sh; acl: acl.sh; attr: xattr.sh; strace: remount.sh, cleaner_idle.sh, full.sh, supervise.sh (the cleaner's wake-ups); libaio-dev, liburing-dev: coherence.sh; xz-utils: golden.sh; debhelper..: the .deb; nfs-ganesha..libnfs-dev: nfs_export.sh; systemd: install.sh (systemd-analyze verify); logrotate: install.sh (logrotate -d)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
	echo "deps: installing ${missing[*]}"
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
