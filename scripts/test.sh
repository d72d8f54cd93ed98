#!/usr/bin/env bash
# test.sh: the project's whole test suite, as CI runs it (.ci/run calls this).
#
#   bash scripts/test.sh
#
# Installs what the tests need from Debian's packages when missing (needs root
# or sudo): qemu-user (arm64 kernels, Arm SME under emulation) and
# qemu-system-x86 + cpio (the 2-node NUMA placement test). Then: gofmt, go vet,
# go test -race ./..., go test -tags=purego ./..., the arm64 packages under
# qemu-aarch64, the NUMA test in a qemu-system guest, and the avo-generated
# assembly must match its generator.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v cpio >/dev/null || need+=(cpio)
if [ ${#need[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	echo "test.sh: installing ${need[*]}" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

step() { printf '\n== %s\n' "$*"; }

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

step "NUMA placement on a 2-node kernel under qemu-system"
bash scripts/numa-qemu-test.sh

step "generated assembly matches its generator"
bash scripts/gen-asm.sh

echo
echo "test.sh: all tests passed"
