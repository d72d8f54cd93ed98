package main

// Help of the --cores-backend and --matrix-backend flags of bench run and
// bench sweep (sweep.CheckBackends checks their values).
const (
	coresBackendHelp  = "gemm backend of the cores target, fp32 weights on the vector units (default: the most capable one, e.g. avx512-fp32, neon-fp32)"
	matrixBackendHelp = "gemm backend of the matrix target of placements matrix, mixed and auto (default: the matrix unit's, e.g. sme-fp32; without one a second backend on the cores, the best bf16 one)"
)
