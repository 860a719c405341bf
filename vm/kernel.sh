#!/usr/bin/env bash
# kernel.sh SERIES: fetch (once) and unpack one of Debian's kernels for the VM suite, then print
# the directory it was unpacked into (it holds boot/vmlinuz-* and lib/modules/).
#
# SERIES is 6.1 (bookworm's default kernel, through the linux-image-amd64 metapackage) or 6.12
# (through linux-image-6.12-amd64). The package is resolved with apt-cache each time, so a newer
# Debian point release is picked up; when apt cannot answer (no lists, no network) the newest
# kernel of the series already in the cache is used. FTCTL_KERNEL_PKG_<SERIES with _ for .>
# (e.g. FTCTL_KERNEL_PKG_6_12) forces a package name.
#
# Cache: $FTCTL_VM_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/ftctl-vm (outside the repo).
set -euo pipefail

series=${1:?usage: kernel.sh 6.1|6.12}
cache=${FTCTL_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ftctl-vm}
mkdir -p "$cache"

case $series in
6.1) meta=linux-image-amd64 re='^linux-image-6\.1\.0-[0-9]+-amd64$' ;;
6.12) meta=linux-image-6.12-amd64 re='^linux-image-6\.12\.[0-9]+\+deb[0-9]+-amd64$' ;;
*) echo "kernel.sh: unknown kernel series '$series' (want 6.1 or 6.12)" >&2; exit 2 ;;
esac
override_var=FTCTL_KERNEL_PKG_${series//./_}

log() { echo "kernel.sh: $*" >&2; }

resolve() {
	local pkg
	if [ -n "${!override_var:-}" ]; then echo "${!override_var}"; return; fi
	pkg=$(apt-cache depends "$meta" 2>/dev/null | awk '/Depends: linux-image-/ {print $2}' | grep -E "$re" | head -n1 || true)
	if [ -z "$pkg" ]; then
		pkg=$(apt-cache pkgnames linux-image- 2>/dev/null | grep -E "$re" | sort -V | tail -n1 || true)
	fi
	echo "$pkg"
}

newest_cached() {
	local d
	for d in "$cache"/linux-image-*; do
		[ -e "$d/.ready" ] || continue
		basename "$d"
	done | grep -E "$re" | sort -V | tail -n1 || true
}

pkg=$(resolve)
if [ -z "$pkg" ] && [ "$(id -u)" = 0 ]; then
	log "apt has no candidate for $meta; running apt-get update"
	apt-get update -qq >&2 || true
	pkg=$(resolve)
fi
if [ -z "$pkg" ]; then
	pkg=$(newest_cached)
	[ -n "$pkg" ] || { log "cannot resolve a Debian $series kernel package and none is cached in $cache"; exit 1; }
	log "apt cannot resolve $meta; using cached $pkg"
fi

dir=$cache/$pkg
if [ ! -e "$dir/.ready" ]; then
	log "fetching $pkg into $cache"
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	# apt-get download runs as _apt where it can; a root-owned temp dir makes it fall back, noisily.
	(cd "$tmp" && apt-get download -q "$pkg" >&2 2>/dev/null) || (cd "$tmp" && apt-get download "$pkg" >&2) || {
		log "apt-get download $pkg failed"
		exit 1
	}
	mkdir -p "$tmp/x"
	dpkg-deb -x "$tmp"/*.deb "$tmp/x"
	ls "$tmp"/x/boot/vmlinuz-* >/dev/null
	touch "$tmp/x/.ready"
	rm -rf "$dir"
	mv "$tmp/x" "$dir"
fi
echo "$dir"
