#!/usr/bin/env bash
# Lays out the root file system of capstan's operator image in DIR: the binary, exactly the
# shared libraries it loads (from ldd, at the paths the dynamic loader looks in), the CA
# certificates and a passwd/group entry for the non-root user the image runs as. No shell, no
# package manager, nothing else. The Dockerfile and scripts/build-image.sh both use it, so the
# two images hold the same files.
#
# The binary goes in without its debug information (the release profile keeps line tables:
# 250 MB of them) but with its symbol table, so a backtrace still names every function. With
# DEBUG_FILE the debug information is kept there, outside the image, and the image's binary
# names it (a GNU debuglink: gdb and addr2line find file and line through it).
#
#   scripts/image-rootfs.sh BINARY DIR [DEBUG_FILE]
set -euo pipefail

[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: $0 BINARY DIR [DEBUG_FILE]" >&2; exit 2; }
bin=$1
root=$2
debug_file=${3:-}
# The user of the Deployment's pod (runAsNonRoot): a fixed number, so Kubernetes can check it.
uid=65532

[ -x "$bin" ] || { echo "image-rootfs.sh: $bin is not an executable" >&2; exit 1; }
ca=/etc/ssl/certs/ca-certificates.crt
[ -f "$ca" ] || { echo "image-rootfs.sh: $ca is missing (install the ca-certificates package)" >&2; exit 1; }

command -v objcopy >/dev/null || { echo "image-rootfs.sh: objcopy is missing (install binutils)" >&2; exit 1; }
mkdir -p "$root"/usr/local/bin "$root"/etc/ssl/certs "$root"/tmp "$root"/var/cache/capstan
if [ -n "$debug_file" ]; then
    mkdir -p "$(dirname "$debug_file")"
    objcopy --only-keep-debug "$bin" "$debug_file"
    objcopy --strip-debug --add-gnu-debuglink="$debug_file" "$bin" "$root/usr/local/bin/capstan"
else
    objcopy --strip-debug "$bin" "$root/usr/local/bin/capstan"
fi
chmod 0755 "$root/usr/local/bin/capstan"

# Every library ldd resolves ("name => /path (addr)") and the loader itself ("/path (addr)"),
# copied to the path it was found at, symlinks resolved.
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
[ -n "$libs" ] || { echo "image-rootfs.sh: ldd found no libraries in $bin (a static binary needs none; check ldd's output)" >&2; }
for lib in $libs; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done

cp -L "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\ncapstan:x:%s:%s:capstan:/nonexistent:/sbin/nologin\n' "$uid" "$uid" > "$root/etc/passwd"
printf 'root:x:0:\ncapstan:x:%s:\n' "$uid" > "$root/etc/group"
# Host names from /etc/hosts (mounted by the kubelet), then DNS; glibc's own default asks DNS first.
printf 'hosts: files dns\n' > "$root/etc/nsswitch.conf"
chmod 1777 "$root/tmp"
chown "$uid:$uid" "$root/var/cache/capstan" 2>/dev/null || true
echo "image-rootfs.sh: $root: $(echo "$libs" | wc -w) libraries, $(du -sh "$root" | cut -f1)" >&2
