#!/usr/bin/env bash
# test-avx512-bochs.sh: run the AVX-512 GEMM and quantized-GEMV kernels'
# tests on an emulated CPU that has AVX-512, for correctness only (emulated
# timings mean nothing).
#
#   bash scripts/test-avx512-bochs.sh
#
# The machines this project's CI runs on have AVX2 but no AVX-512, and
# qemu's TCG emulates no AVX-512, so the AVX-512 microkernels would
# otherwise never execute in CI. Bochs 2.7 (Debian's bochs package) emulates
# AVX512F/CD/BW/DQ/VL in its corei7_skylake_x CPU model. It also emulates
# AVX512_VNNI, but only in its icelake and tigerlake models, which are not
# usable here: Debian's 6.1 kernel stops after "LSM: Security Framework
# initializing" on them, and when it does boot (tigerlake, with a long
# BENCH_BOCHS_CLEARCPUID list and "nosmap nosmep nopti idle=halt") the Go
# test binaries crash on corrupted pointers even with the VNNI kernel
# disabled (BENCH_CPU_DISABLE=vnni on the kernel command line). So
# avx512vnni-int8 and kernels/quant's avx512vnni are not run here (they
# self-test on first use instead, see kernels/gemm and kernels/quant);
# Bochs 2.7 has no AVX512_BF16, AVX512_FP16, AVX-VNNI or AMX. On
# corei7_skylake_x (AVX512BW without VNNI) kernels/quant chooses its
# avx512bw backend, and the guest asserts that: the kernel command line
# carries BENCH_QUANT_REQUIRE=avx512bw (Linux hands unknown name=value
# arguments to /init's environment, and bochsinit to the tests), which
# TestAVX512BWRequired checks (BENCH_BOCHS_QUANT_REQUIRE replaces the
# value, empty to drop it; it is empty by default for another
# BENCH_BOCHS_CPU).
#
# Steps: Debian's amd64 kernel (fetched once to the cache directory, like
# scripts/numa-qemu-test.sh), static test binaries of ./kernels/gemm,
# ./kernels/peak and ./kernels/quant (its avx512bw tests and the
# avx512bw subtests of its column-order and float64-reference tests for
# q8_0 and q4_0, with -test.short; the other backends' and formats' cases
# are minutes under emulation and nothing AVX-512 in them) (with
# BENCH_BOCHS_FULL=1 also ./kernels, the memory and
# non-linear kernels: Bochs runs about 300x slower than this CPU, so that
# adds half an hour), and scripts/bochsinit as /init, in an initramfs on an
# isolinux CD image; Bochs boots it (3-4 minutes to the guest's init on one
# core, then the tests) and the script reads the guest's serial console. It
# fails unless the guest reports avx512f and avx512bw (BENCH_BOCHS_REQUIRE)
# and every test binary passes, and it lists each AVX-512 subtest that ran.
# The guest kernel runs with
#   clearcpuid=pku,ospke,xsaves,xsavec
# because Bochs 2.7 reports inconsistent XSAVE sizes for PKRU and for the
# compacted format, and Linux then turns XSAVE, and with it AVX, off.
# Knobs: BENCH_BOCHS_TIMEOUT (seconds, default 900; the guest is done in
# about 280 s during CI here, 165 s alone) bounds the guest, both attempts
# together; BENCH_BOCHS_STALL (seconds, default 240) is how long an attempt
# may run before the guest's /init prints its first line (BOCHS-FLAGS)
# before Bochs is restarted (once). Exit 3 says the kernels' tests did not
# complete although none failed: /init never started in either attempt, or
# the time ran out with no failure on the console. scripts/test.sh reports
# that as "did NOT run" without failing (the emulator's speed is not the
# kernels' correctness); a failure the guest printed always exits 1.
# Twice in a row CI's guest showed nothing in 900-1500 s while it takes
# 165-280 s here; on a timeout the script prints the console's size, first
# bytes and last lines and Bochs's CPU time, to tell a starved emulator
# from a stuck guest.
# BENCH_BOCHS_CPU picks the Bochs CPU model; BENCH_BOCHS_CLEARCPUID replaces
# the clearcpuid list; BENCH_BOCHS_CMDLINE adds kernel arguments (e.g.
# "earlyprintk=serial,ttyS0 ignore_loglevel" to watch the boot);
# BENCH_BOCHS_KEEP=FILE keeps the guest's serial log.
# Needs apt (Debian) and root to install bochs, bochsbios, bochs-term,
# isolinux, syslinux-common, xorriso and cpio when they are missing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/bench"
kernel="$cache/vmlinuz"
timeout_s="${BENCH_BOCHS_TIMEOUT:-900}"

need=()
command -v bochs >/dev/null || need+=(bochs)
[ -e /usr/share/bochs/BIOS-bochs-latest ] || need+=(bochsbios)
[ -e /usr/lib/x86_64-linux-gnu/bochs/plugins/libbx_term_gui.so ] || need+=(bochs-term)
[ -e /usr/lib/ISOLINUX/isolinux.bin ] || need+=(isolinux)
[ -e /usr/lib/syslinux/modules/bios/ldlinux.c32 ] || need+=(syslinux-common)
command -v xorriso >/dev/null || need+=(xorriso)
[ -e /usr/share/bochs/VGABIOS-lgpl-latest ] || need+=(vgabios) # bochs only recommends it; --no-install-recommends leaves it out
command -v cpio >/dev/null || need+=(cpio)
command -v script >/dev/null || need+=(bsdutils)
if [ ${#need[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "test-avx512-bochs: installing ${need[*]}" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ ! -s "$kernel" ]; then
	pkg="$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')"
	if [ -z "$pkg" ]; then
		echo "test-avx512-bochs: apt-cache depends linux-image-amd64 names no kernel package (run apt-get update?)" >&2
		exit 1
	fi
	dl="$(mktemp -d)"
	chmod 0777 "$dl" # apt-get download drops to the _apt user
	(cd "$dl" && apt-get download "$pkg" >/dev/null)
	mkdir -p "$cache"
	dpkg-deb --fsys-tarfile "$dl"/"$pkg"_*.deb | tar -xO --wildcards './boot/vmlinuz-*' >"$kernel.tmp.$$"
	rm -rf "$dl"
	[ -s "$kernel.tmp.$$" ] || { echo "test-avx512-bochs: no ./boot/vmlinuz-* in $pkg" >&2; exit 1; }
	mv "$kernel.tmp.$$" "$kernel"
	echo "$pkg" >"$cache/vmlinuz.pkg"
fi

work="$(mktemp -d)"
pid=""
cleanup() {
	[ -n "$pid" ] && pkill -9 -P "$pid" 2>/dev/null || true
	pkill -9 -f "bochs-bin -q -q -f $work/" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# The guest: /init and the test binaries, with the tests' arguments. The
# kernels package skips its float32-exhaustive and AVX2-only tests (minutes
# under emulation, and nothing AVX-512 in them).
mkdir -p "$work/rootfs/tests" "$work/iso/isolinux"
cd "$root"
CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -ldflags='-s -w' -o "$work/rootfs/init" ./scripts/bochsinit
pkgs=(kernels/gemm kernels/peak kernels/quant)
if [ "${BENCH_BOCHS_FULL:-0}" = 1 ]; then
	pkgs+=(kernels)
fi
for p in "${pkgs[@]}"; do
	n="${p//\//_}"
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go test -c -ldflags='-s -w' -o "$work/rootfs/tests/$n.test" "./$p"
	echo "-test.short -test.v -test.count=1" >"$work/rootfs/tests/$n.test.args"
done
# The arm64 generator's tests read the repository's files, absent in the guest.
echo "-test.short -test.v -test.count=1 -test.skip ^TestARM64Asm" >"$work/rootfs/tests/kernels_gemm.test.args"
# kernels/quant: the avx512bw tests, and of the column-order and reference
# tests only the avx512bw subtests of q8_0 and q4_0 (the pattern's levels:
# test, backend, format).
echo "-test.short -test.v -test.count=1 -test.run ^(TestAVX512BW.*|TestColumnMul|TestColumnSelfTest|TestMulReference|TestKQuantRegistered)\$/^avx512bw\$/^q[48]_0\$" >"$work/rootfs/tests/kernels_quant.test.args"
quant_require="${BENCH_BOCHS_QUANT_REQUIRE-}"
if [ -z "${BENCH_BOCHS_QUANT_REQUIRE+set}" ] && [ "${BENCH_BOCHS_CPU:-corei7_skylake_x}" = corei7_skylake_x ]; then
	quant_require=avx512bw
fi
if [ "${BENCH_BOCHS_FULL:-0}" = 1 ]; then
	echo "-test.short -test.v -test.count=1 -test.skip TestDotRows|TestAxpyRows|TestDotDispatch|TestExpAllFloat32" >"$work/rootfs/tests/kernels.test.args"
fi
(cd "$work/rootfs" && find . | cpio -o -H newc --quiet | gzip -1 >"$work/iso/initrd.gz")
cp "$kernel" "$work/iso/vmlinuz"
cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$work/iso/isolinux/"
cat >"$work/iso/isolinux/isolinux.cfg" <<CFG
DEFAULT linux
PROMPT 0
TIMEOUT 0
LABEL linux
  KERNEL /vmlinuz
  APPEND initrd=/initrd.gz console=ttyS0,115200 panic=-1 quiet nokaslr mitigations=off clearcpuid=${BENCH_BOCHS_CLEARCPUID:-pku,ospke,xsaves,xsavec} ${quant_require:+BENCH_QUANT_REQUIRE=$quant_require} ${BENCH_BOCHS_CMDLINE:-}
CFG
xorriso -as mkisofs -quiet -o "$work/boot.iso" -b isolinux/isolinux.bin -c isolinux/boot.cat \
	-no-emul-boot -boot-load-size 4 -boot-info-table "$work/iso" 2>/dev/null

cat >"$work/bochsrc" <<RC
megs: 512
cpu: model=${BENCH_BOCHS_CPU:-corei7_skylake_x}, count=1, ips=200000000, reset_on_triple_fault=0
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/bochs/VGABIOS-lgpl-latest
ata0: enabled=1, ioaddr1=0x1f0, ioaddr2=0x3f0, irq=14
ata0-master: type=cdrom, path=$work/boot.iso, status=inserted
boot: cdrom
clock: sync=none, time0=local
display_library: term
com1: enabled=1, mode=file, dev=$work/serial.out
log: $work/bochs.log
panic: action=fatal
error: action=ignore
info: action=ignore
debug: action=ignore
RC
echo c >"$work/debug.rc" # Debian's bochs is built with its debugger: continue at once

# Debian's bochs has no headless display, only a terminal one: give it a pty.
# A guest whose /init has printed nothing after BENCH_BOCHS_STALL seconds
# (default 240; it prints within about a minute here) is restarted once.
stall_s="${BENCH_BOCHS_STALL:-240}"
# show_serial prints how far the guest got: the serial console's size, its
# first bytes (as od shows them: a console of only control bytes looks
# empty otherwise), its last lines and the Bochs process's CPU time (a
# starved emulator, not a stuck guest, when it is far below the wall time).
show_serial() {
	echo "test-avx512-bochs: serial console: $(wc -c <"$work/serial.out" 2>/dev/null || echo no) bytes after $((SECONDS - attempt_start))s of this attempt; Bochs's CPU time: $(ps -o time= -C bochs-bin 2>/dev/null | tr '\n' ' ')" >&2
	head -c 48 "$work/serial.out" 2>/dev/null | od -c | head -n 3 >&2 || true
	grep -a '^BOCHS-RUN' "$work/serial.out" 2>/dev/null | tail -n 1 >&2 || true
	tail -c 2000 "$work/serial.out" 2>/dev/null | tr -d '\r' >&2 || true
	echo >&2
}
show_bochs() {
	echo "test-avx512-bochs: Bochs's terminal (last lines):" >&2
	tail -n 20 "$work/bochs.stdout" 2>/dev/null | tr -d '\033' | tail -c 2000 >&2 || true
	echo "test-avx512-bochs: bochs.log (last lines):" >&2
	tail -n 10 "$work/bochs.log" 2>/dev/null >&2 || true
}
kill_bochs() {
	[ -n "$pid" ] && pkill -9 -P "$pid" 2>/dev/null || true
	pkill -9 -f "bochs-bin -q -q -f $work/" 2>/dev/null || true
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=""
}
start=$SECONDS
for attempt in 1 2; do
	echo "test-avx512-bochs: booting Bochs (${BENCH_BOCHS_CPU:-corei7_skylake_x}), attempt $attempt ..." >&2
	rm -f "$work/serial.out" "$work/bochs.log"
	attempt_start=$SECONDS
	TERM=xterm script -q -c "bochs -q -f $work/bochsrc -rc $work/debug.rc" /dev/null </dev/null >"$work/bochs.stdout" 2>&1 &
	pid=$!
	stalled=0
	while :; do
		if grep -aq '^BOCHS-DONE' "$work/serial.out" 2>/dev/null; then
			break
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			# Bochs quits at the guest's ACPI power-off and flushes the serial
			# file as it exits: look once more.
			sleep 1
			if grep -aq '^BOCHS-DONE' "$work/serial.out" 2>/dev/null; then
				break
			fi
			echo "test-avx512-bochs: Bochs exited before the guest was done" >&2
			tail -c 3000 "$work/serial.out" 2>/dev/null >&2 || true
			show_bochs
			exit 1
		fi
		if ! grep -aq '^BOCHS-FLAGS' "$work/serial.out" 2>/dev/null && ((SECONDS - attempt_start > stall_s)); then
			echo "test-avx512-bochs: the guest's /init did not start in ${stall_s}s" >&2
			show_serial
			show_bochs
			kill_bochs
			stalled=1
			break
		fi
		if ((SECONDS - start > timeout_s)); then
			echo "test-avx512-bochs: no result after ${timeout_s}s" >&2
			show_serial
			show_bochs
			if grep -aqE '^\s*--- FAIL|^panic:|^FAIL|SIGILL|illegal instruction' "$work/serial.out" 2>/dev/null; then
				exit 1
			fi
			# Slow, not wrong: nothing failed before the time ran out.
			exit 3
		fi
		sleep 5
	done
	[ "$stalled" = 1 ] || break
	if [ "$attempt" = 2 ]; then
		echo "test-avx512-bochs: the guest's /init never started (2 attempts)" >&2
		exit 3
	fi
done
echo "test-avx512-bochs: guest done after $((SECONDS - start))s" >&2

out="$work/serial.out"
if [ -n "${BENCH_BOCHS_KEEP:-}" ]; then
	cp "$out" "$BENCH_BOCHS_KEEP"
fi
status=0
flags="$(grep -a '^BOCHS-FLAGS' "$out" | head -n1)"
for f in ${BENCH_BOCHS_REQUIRE:-avx512f avx512bw}; do
	if ! grep -qw "$f" <<<"$flags"; then
		echo "test-avx512-bochs: the guest lacks $f (flags: ${flags#BOCHS-FLAGS })" >&2
		status=1
	fi
done
grep -a -E '^\s*--- (FAIL|PASS|SKIP): .*(avx512|AVX512)' "$out" | sed 's/^/guest: /' || true
grep -a -E '^\s*--- FAIL|^panic:|^FAIL|SIGILL|illegal instruction' "$out" | sed 's/^/guest: /' || true
grep -a '^BOCHS-RESULT' "$out"
if ! grep -aq '^BOCHS-DONE fails=0' "$out"; then
	status=1
fi
ran=$(grep -a -c -E '^\s*--- PASS: .*(avx512|AVX512)' "$out" || true)
echo "test-avx512-bochs: $ran AVX-512 (sub)tests passed in the guest"
if [ "$ran" -eq 0 ]; then
	status=1
fi
exit "$status"
