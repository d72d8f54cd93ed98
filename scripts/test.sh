#!/usr/bin/env bash
# test.sh: the project's whole test suite, as CI runs it (.ci/run calls this).
#
#   bash scripts/test.sh
#
# Installs what the tests need from Debian's packages when missing (needs root
# or sudo): qemu-user (arm64 kernels, Arm SME under emulation),
# qemu-system-x86 + cpio (the 2-node NUMA placement test), jq
# (scripts/fidelity.sh's summary under test), slurm-wlm + munge
# (scripts/slurm-test.sh) and what scripts/test-avx512-bochs.sh needs (bochs,
# isolinux, xorriso). Then: gofmt, go vet, go test -race ./..., go test
# -tags=purego ./..., the arm64 packages under qemu-aarch64 (and the engine's
# placement tests there, with SME and without: BENCH_ENGINE_REQUIRE_MATRIX
# says which matrix backend must be chosen), the NUMA test in a qemu-system
# guest, a 2-cell sweep's Slurm job array on a one-node Slurm on localhost
# (scripts/slurm-test.sh, under a minute; BENCH_SKIP_SLURM=1 skips it), the
# fixture report.html pages rendered in headless Chromium (scripts/test-html.sh,
# which installs Debian's chromium when missing; under a minute, about 40 s
# more to install; BENCH_SKIP_HTML=1 skips it), and the
# avo-generated assembly must match its generator. On a host without
# AVX-512 the AVX-512 kernels' tests run meanwhile in a Bochs guest (one
# core, about 3 minutes; BENCH_SKIP_BOCHS=1 skips them) and the script waits
# for them at the end; on a host with it they run natively.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v cpio >/dev/null || need+=(cpio)
# jq: scripts/fidelity.sh's summary, which scripts/fidreplay's test runs.
command -v jq >/dev/null || need+=(jq)
# GNU as and objdump check the AMX kernels' hand-encoded instructions
# (kernels/gemm's amx tests skip without them).
command -v objdump >/dev/null && command -v as >/dev/null || need+=(binutils)
if [ "${BENCH_SKIP_SLURM:-0}" != 1 ]; then
	for c in slurmctld slurmd sbatch munged; do
		PATH="$PATH:/usr/sbin:/sbin" command -v "$c" >/dev/null || { need+=(slurm-wlm munge); break; }
	done
fi
if [ ${#need[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "test.sh: installing ${need[*]}" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

step() { printf '\n== %s (at %d s)\n' "$*" "$SECONDS"; }

# The Bochs guest runs on one core alongside the other steps, on hosts
# without AVX-512. A host with avx512f and avx512bw runs the AVX-512 kernels'
# tests natively in go test (the backends are chosen by the host's CPUID),
# and the last step checks that they did; BENCH_BOCHS_FORCE=1 boots Bochs
# anyway.
bochs_log=""
native_avx512=0
if grep -qw avx512f /proc/cpuinfo 2>/dev/null && grep -qw avx512bw /proc/cpuinfo 2>/dev/null; then
	native_avx512=1
fi
if [ "${BENCH_SKIP_BOCHS:-0}" != 1 ] && { [ "$native_avx512" = 0 ] || [ "${BENCH_BOCHS_FORCE:-0}" = 1 ]; }; then
	bochs_log="$(mktemp)"
	bash scripts/test-avx512-bochs.sh >"$bochs_log" 2>&1 &
	bochs_pid=$!
	trap 'kill "$bochs_pid" 2>/dev/null || true; rm -f "$bochs_log"' EXIT
fi

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi

step "go vet (amd64, arm64)"
go vet ./...
GOARCH=arm64 go vet ./...

step "go test -race ./..."
go test -race -count=1 ./...

step "go test -tags=purego ./..."
go test -tags=purego -count=1 ./...

step "arm64 under qemu-aarch64: SME (512-bit, no FA64, like Apple M4), then without SVE/SME"
arm64_pkgs=(./internal/cpu/ ./kernels/... ./results/...)
BENCH_GEMM_REQUIRE=sme-fp32,neon-int8 GOARCH=arm64 go test -count=1 -exec 'qemu-aarch64 -cpu max,sme512=on,sme_fa64=off' "${arm64_pkgs[@]}"
GOARCH=arm64 go test -count=1 -short -exec 'qemu-aarch64 -cpu max,sve=off,sme=off' "${arm64_pkgs[@]}"

step "placements under qemu-aarch64: cores on NEON, matrix on SME, mixed on both, auto by its plan (engine, bench run, the probe's mixed GEMM); without SME matrix falls back to the cores with the note"
placement_run='^(TestPlacementTargets|TestPlacements)$/^(cores|matrix|mixed|auto)$'
cmd_run='^(TestRunPlacementTargets|TestBackendFlagErrors)$'
for cfg in "sme-fp32|max,sme512=on,sme_fa64=off" "none|max,sve=off,sme=off"; do
	want="${cfg%%|*}" cpu="${cfg#*|}"
	BENCH_ENGINE_REQUIRE_MATRIX="$want" GOARCH=arm64 go test -count=1 -exec "qemu-aarch64 -cpu $cpu" -run "$placement_run" ./engine/
	BENCH_ENGINE_REQUIRE_MATRIX="$want" GOARCH=arm64 go test -count=1 -exec "qemu-aarch64 -cpu $cpu" -run "$cmd_run" ./cmd/bench/
	GOARCH=arm64 go test -count=1 -exec "qemu-aarch64 -cpu $cpu" -run '^TestMatrixSection$' ./probes/
done

step "NUMA placement on 2- and 4-node kernels under qemu-system (internal/numa, the probe, the engine's NUMA policies)"
bash scripts/numa-qemu-test.sh

if [ "${BENCH_SKIP_SLURM:-0}" != 1 ]; then
	step "the Slurm job array of a 2-cell sweep on slurmctld and slurmd on localhost"
	bash scripts/slurm-test.sh
else
	step "Slurm: skipped (BENCH_SKIP_SLURM=1)"
fi

if [ "${BENCH_SKIP_HTML:-0}" != 1 ]; then
	step "report.html of the fixture profile and sweep rendered in headless Chromium"
	bash scripts/test-html.sh
else
	step "report.html in Chromium: skipped (BENCH_SKIP_HTML=1)"
fi

step "generated assembly matches its generator"
bash scripts/gen-asm.sh

if [ "$native_avx512" = 1 ]; then
	step "AVX-512 kernels on this host's own AVX-512 (avx512f, avx512bw in /proc/cpuinfo)"
	avx_out="$(mktemp)"
	go test -short -count=1 -v ./kernels/gemm ./kernels/peak ./kernels/quant >"$avx_out" 2>&1 || { tail -n 40 "$avx_out" >&2; rm -f "$avx_out"; exit 1; }
	ran=$(grep -c -E '^\s*--- PASS: .*(avx512|AVX512)' "$avx_out" || true)
	rm -f "$avx_out"
	echo "test.sh: $ran AVX-512 (sub)tests passed natively"
	if [ "$ran" -eq 0 ]; then
		echo "test.sh: the host reports AVX-512 but no AVX-512 test ran" >&2
		exit 1
	fi
fi
if [ -n "$bochs_log" ]; then
	step "AVX-512 GEMM kernels in a Bochs guest (Skylake-X model)"
	bochs_status=0
	wait "$bochs_pid" || bochs_status=$?
	cat "$bochs_log"
	if [ "$bochs_status" -eq 3 ]; then
		# Exit 3: the guest's tests did not complete and none failed
		# (its /init never started, twice, or the time ran out). That is
		# the emulator's speed, not the kernels: say so loudly and go on.
		echo "test.sh: WARNING: the AVX-512 kernels' tests did NOT complete in Bochs this time, and none failed: the emulator was too slow or never booted its guest (see above)" >&2
	elif [ "$bochs_status" -ne 0 ]; then
		echo "test.sh: scripts/test-avx512-bochs.sh failed (exit $bochs_status)" >&2
		exit 1
	fi
fi

echo
echo "test.sh: all tests passed"
