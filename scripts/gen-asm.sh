#!/usr/bin/env bash
# gen-asm.sh regenerates the avo-generated assembly of package kernels
# (go generate ./kernels/, which runs the generator module in kernels/_asm)
# and fails if the result differs from the file in the tree, so CI catches a
# generator change without its regenerated .s, or a hand edit of the .s.
set -euo pipefail
cd "$(dirname "$0")/.."

generated=(kernels/mem_amd64.s kernels/nonlinear_amd64.s kernels/dot_amd64.s kernels/peak/peak_amd64.s kernels/gemm/kernels_amd64.s kernels/gemm/amx_amd64.s kernels/quant/kernels_amd64.s kernels/quant/prefill_amd64.s kernels/quant/kquant_amd64.s kernels/quant/col_amd64.s kernels/readpf_amd64.s)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "${generated[@]}"; do
	mkdir -p "$tmp/$(dirname "$f")"
	cp "$f" "$tmp/$f"
done

go generate ./kernels/...

status=0
for f in "${generated[@]}"; do
	if ! diff -u "$tmp/$f" "$f"; then
		echo "gen-asm: $f is out of date with kernels/_asm; the regenerated file is in the tree, commit it" >&2
		status=1
	fi
done
exit "$status"
