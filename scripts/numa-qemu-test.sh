#!/usr/bin/env bash
# numa-qemu-test.sh: run the NUMA tests in qemu-system-x86_64 guests (TCG,
# 2 CPUs, two 512 MiB nodes, distance 20; or 4 CPUs and four 256 MiB nodes;
# see internal/qemutest): the placement test of internal/numa, the
# end-to-end test of the numa section of `bench probe` (probes), and the
# engine's NUMA policies on 2 and 4 nodes (logits against os, page placement
# per tensor; engine/numa_qemu_test.go, which runs only here).
#
# It fetches Debian's current amd64 kernel once (the package that the
# linux-image-amd64 metapackage depends on), extracts /boot/vmlinuz-* to
# ${XDG_CACHE_HOME:-$HOME/.cache}/bench/vmlinuz, then runs
#   BENCH_QEMU_KERNEL=<that> BENCH_REQUIRE_QEMU=1 go test -run '^TestQEMU' ./internal/numa/ ./probes/ ./engine/
# Extra arguments go to `go test` (e.g. -race); BENCH_QEMU_TIMEOUT (a Go
# duration, default 2m) bounds each guest. Set BENCH_QEMU_REFRESH=1 to
# fetch the kernel again. Needs apt (Debian/Ubuntu host) and, if
# qemu-system-x86_64 is missing, root to install it.
set -euo pipefail

cache="${XDG_CACHE_HOME:-$HOME/.cache}/bench"
kernel="$cache/vmlinuz"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! command -v qemu-system-x86_64 >/dev/null; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "numa-qemu-test: qemu-system-x86_64 missing; run: apt-get install -y --no-install-recommends qemu-system-x86" >&2
		exit 1
	fi
	apt-get install -y --no-install-recommends qemu-system-x86
fi

if [ ! -s "$kernel" ] || [ "${BENCH_QEMU_REFRESH:-0}" = 1 ]; then
	pkg="$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')"
	if [ -z "$pkg" ]; then
		echo "numa-qemu-test: apt-cache depends linux-image-amd64 names no kernel package (run apt-get update?)" >&2
		exit 1
	fi
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	chmod 0777 "$tmp" # apt-get download drops to the _apt user
	(cd "$tmp" && apt-get download "$pkg")
	mkdir -p "$cache"
	dpkg-deb --fsys-tarfile "$tmp"/"$pkg"_*.deb | tar -xO --wildcards './boot/vmlinuz-*' >"$kernel.tmp.$$"
	if [ ! -s "$kernel.tmp.$$" ]; then
		echo "numa-qemu-test: no ./boot/vmlinuz-* in $pkg" >&2
		exit 1
	fi
	mv "$kernel.tmp.$$" "$kernel"
	echo "$pkg" >"$cache/vmlinuz.pkg"
	echo "numa-qemu-test: kernel $pkg -> $kernel" >&2
fi

cd "$root"
BENCH_QEMU_KERNEL="$kernel" BENCH_REQUIRE_QEMU=1 exec go test -count=1 -run '^TestQEMU' -v "$@" ./internal/numa/ ./probes/ ./engine/
