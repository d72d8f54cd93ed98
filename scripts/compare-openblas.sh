#!/usr/bin/env bash
# compare-openblas.sh measures package gemm against OpenBLAS sgemm in one
# process, single-threaded, on the Llama-3.2-3B prefill shapes, then the
# decode GEMV (fp32, bf16, int8 weights) against the read bandwidth of
# package kernels, interleaved, best of --reps runs each. It needs cgo and
# libopenblas-dev (the harness kernels/gemm/openblas builds only with the
# tag openblas). OpenBLAS 0.3.21 misdetects some CPUs: the core type defaults
# to Zen on AMD and SkylakeX on Intel with AVX-512, Haswell otherwise;
# override with OPENBLAS_CORETYPE. Extra arguments go to the harness
# (-backend avx512-fp32, -shapes 256x3072x3072, -reps 15, -gemv 0, -threads 2).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -z "${OPENBLAS_CORETYPE:-}" ]]; then
	if grep -q AuthenticAMD /proc/cpuinfo; then
		OPENBLAS_CORETYPE=Zen
	elif grep -qw avx512f /proc/cpuinfo; then
		OPENBLAS_CORETYPE=SkylakeX
	else
		OPENBLAS_CORETYPE=Haswell
	fi
fi
export OPENBLAS_CORETYPE
# -threads N (default 1) runs both sides on N threads: OpenBLAS's pool and a
# pinned kernels/pool group (gemm.Run); the GEMV section stays single-threaded.
exec go run -tags openblas ./kernels/gemm/openblas "$@"
