#!/usr/bin/env bash
# Makes a Debian 11 root (bullseye: glibc 2.31) with its own OpenJDK 17, for one architecture, in
# which tests run treescore's jars on an older Linux than the build machine's, and on aarch64.
#
# Usage: build/debian_root.sh ARCH DEST     (ARCH: x86_64 or aarch64; a finished DEST is reused)
#
# debootstrap's first stage (--foreign) only downloads and unpacks; nothing in the root runs while
# it is made, so one recipe serves both architectures. Every package it fetched is then unpacked
# with dpkg -x: a JVM needs its files, not its maintainer scripts. The aarch64 root also gets a
# static qemu-aarch64 (unpacked from Debian's qemu-user-static, not installed), so that it runs in a
# chroot without binfmt_misc. Needs root and Debian's apt; installs debootstrap if it is missing.
set -euo pipefail
# debootstrap, and the chroot and mount it runs, live in sbin, which a plain user's PATH lacks.
export PATH="$PATH:/usr/sbin:/sbin"
if [[ $# -ne 2 ]]; then
  echo "usage: build/debian_root.sh ARCH DEST" >&2
  exit 2
fi
arch="$1" dest="$2"
case "$arch" in
  x86_64) debian_arch=amd64 ;;
  aarch64) debian_arch=arm64 ;;
  *) echo "debian_root: no Debian architecture for $arch; expected x86_64 or aarch64" >&2; exit 2 ;;
esac
[[ -f "$dest/.complete" ]] && exit 0

if ! command -v debootstrap > /dev/null || [[ "$arch" == aarch64 ]]; then
  apt-get update -qq
fi
command -v debootstrap > /dev/null || apt-get install -y -qq debootstrap > /dev/null

work="$dest.partial"
rm -rf "$work"
mkdir -p "$work"
debootstrap --foreign --arch="$debian_arch" --variant=minbase --include=openjdk-17-jre-headless \
  bullseye "$work" > "$work.log" 2>&1 || { tail -20 "$work.log" >&2; exit 1; }
for deb in "$work"/var/cache/apt/archives/*.deb; do
  dpkg -x "$deb" "$work"
done
rm -f "$work"/var/cache/apt/archives/*.deb
# What base-passwd's maintainer script would have written: Hadoop's login asks who runs the JVM.
cp "$work/usr/share/base-passwd/passwd.master" "$work/etc/passwd"
cp "$work/usr/share/base-passwd/group.master" "$work/etc/group"

if [[ "$arch" == aarch64 ]]; then
  qemu="$(mktemp -d)"
  (cd "$qemu" && apt-get download -qq -o APT::Sandbox::User=root qemu-user-static > /dev/null && dpkg -x qemu-user-static_*.deb unpacked)
  cp "$qemu/unpacked/usr/bin/qemu-aarch64-static" "$work/usr/bin/"
  rm -rf "$qemu"
fi

touch "$work/.complete"
rm -rf "$dest" "$work.log"
mv "$work" "$dest"
