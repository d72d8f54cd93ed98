#!/usr/bin/env bash
# compare-likwid-peak.sh: bench's compute ceilings against likwid-bench's
# peakflops kernels, measured in one run on the same machine, the two tools
# interleaved round by round.
#
#   bash scripts/compare-likwid-peak.sh [rounds]      (default 5 rounds)
#
# Prints, per figure, the median over rounds of both tools and ends the line
# with ratio=<bench/likwid>:
#   FP32 and FP64 FMA peaks, 1 thread and all cores: bench's avx512_fma_fp32/
#   fp64 against likwid's peakflops_sp_avx512_fma/peakflops_avx512_fma where
#   the CPU has AVX-512F, else avx2_fma_* against peakflops_sp_avx_fma/
#   peakflops_avx_fma (likwid: 32 kB working set in L1, one load per
#   iteration beside the FMAs; bench: registers only).
# Then the dot-product ceilings against the multiple of bench's own FP32 FMA
# ceiling of the same width that the ISA defines (ratio=<achieved/expected>):
#   avx512_bf16_dp (VDPBF16PS, 2x FLOP per instruction of VFMADD231PS zmm),
#   avx512_fp16_fma (VFMADD231PH, 2x), avx512_vnni_int8 (VPDPBUSD zmm, 4x ops),
#   avx_vnni_int8 (VPDPBUSD ymm, 4x avx2_fma_fp32), where present. A ratio
#   below 1 says the instruction issues at a lower rate than the FMA.
#
# bench's figures come from `bench probe --only compute --json -` (jq:
# .compute.peaks[] | select(.kernel==K and .threads==T) | .rate.median). Set
# BENCH_COMPUTE_CMD to another command printing the same JSON to use that.
# Needs likwid and jq (installed from Debian's packages when missing; root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}

need=()
command -v likwid-bench >/dev/null || need+=(likwid)
command -v jq >/dev/null || need+=(jq)
if [ ${#need[@]} -gt 0 ]; then
	sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ -z "${BENCH_COMPUTE_CMD:-}" ]; then
	bin=$(mktemp -d)/bench
	go build -o "$bin" ./cmd/bench
	BENCH_COMPUTE_CMD="$bin probe --only compute --json -"
fi
all=$(nproc)

if grep -qw avx512f /proc/cpuinfo; then
	lv=avx512_fma; bv=avx512
else
	lv=avx_fma; bv=avx2
fi
# figure name | likwid test | bench kernel
figures=(
	"FP32-FMA|peakflops_sp_$lv|${bv}_fma_fp32"
	"FP64-FMA|peakflops_$lv|${bv}_fma_fp64"
)
# dot-product kernel | FP32 reference kernel | ISA-defined multiple
dots=(
	"avx512_bf16_dp|avx512_fma_fp32|2"
	"avx512_fp16_fma|avx512_fma_fp32|2"
	"avx512_vnni_int8|avx512_fma_fp32|4"
	"avx_vnni_int8|avx2_fma_fp32|4"
)

declare -A lk bn
likwid_gflops() { # test threads
	likwid-bench -t "$1" -w "N:32kB:$2" 2>/dev/null | awk '/^MFlops\/s:/ { print $2/1000 }'
}
bench_rate() { # json kernel threads
	jq -r --arg k "$2" --argjson t "$3" '[.compute.peaks[] | select(.kernel == $k and .threads == $t) | .rate.median][0] // empty' "$1"
}
# vals prints the space-separated values of $1 one per line (none if empty).
vals() { tr ' ' '\n' <<<"$1" | grep . || true; }
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

threads_list="1"
[ "$all" -gt 1 ] && threads_list="1 $all"
json=$(mktemp)
trap 'rm -f "$json"' EXIT
for r in $(seq "$rounds"); do
	echo "round $r/$rounds" >&2
	$BENCH_COMPUTE_CMD >"$json"
	for t in $threads_list; do
		for f in "${figures[@]}"; do
			IFS='|' read -r name test kernel <<<"$f"
			lk["$name|$t"]+="$(likwid_gflops "$test" "$t") "
			bn["$name|$t"]+="$(bench_rate "$json" "$kernel" "$t") "
		done
		for d in "${dots[@]}"; do
			IFS='|' read -r kernel ref mult <<<"$d"
			bn["$kernel|$t"]+="$(bench_rate "$json" "$kernel" "$t") "
			bn["$ref|$t"]+="$(bench_rate "$json" "$ref" "$t") "
		done
	done
done

echo "# bench vs likwid-bench ($(likwid-bench -h 2>&1 | head -1 | tr -d '\n' || true)), $rounds interleaved rounds, medians, GFLOP/s (GOP/s for int8) = 1e9 per second"
for t in $threads_list; do
	for f in "${figures[@]}"; do
		IFS='|' read -r name test kernel <<<"$f"
		l=$(vals "${lk["$name|$t"]}" | median)
		b=$(vals "${bn["$name|$t"]}" | median)
		ratio=$(awk -v b="$b" -v l="$l" 'BEGIN { if (l > 0 && b > 0) printf "%.3f", b / l; else print "nan" }')
		printf '%-10s threads=%-3s bench(%s)=%8.2f likwid(%s)=%8.2f ratio=%s\n' "$name" "$t" "$kernel" "${b:-0}" "$test" "${l:-0}" "$ratio"
	done
done
for t in $threads_list; do
	for d in "${dots[@]}"; do
		IFS='|' read -r kernel ref mult <<<"$d"
		b=$(vals "${bn["$kernel|$t"]}" | median)
		f=$(vals "${bn["$ref|$t"]}" | median)
		if [ -z "$b" ] || [ -z "$f" ]; then
			echo "$kernel threads=$t: not available on this CPU"
			continue
		fi
		ratio=$(awk -v b="$b" -v f="$f" -v m="$mult" 'BEGIN { printf "%.3f", b / (m * f) }')
		printf '%-17s threads=%-3s achieved=%8.2f expected=%sx %s=%8.2f ratio=%s\n' "$kernel" "$t" "$b" "$mult" "$ref" "$f" "$ratio"
	done
done
