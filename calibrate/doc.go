// Package calibrate is `bench calibrate` (issue #16 part 2): it runs a
// designed set of operator shapes covering every regime of this machine —
// fp32 GEMM and GEMV at several M, N, K (probes.GEMMBench, as `bench gemm`
// runs them), attention prefill and decode at several contexts
// (opbench.RunAttention, as `bench attention`), and the vector operators
// (RMSNorm, residual add, RoPE, softmax, SiLU·mul: package kernels) at
// several widths, at 1 and all threads — and records for each shape the
// measured time (median of the repetitions, min, max, cv and a noise mark,
// results.Stat and results.Noise) beside the roofline's prediction from a
// profile (roofline.PlaceCall on the cores, at the thread count that ran).
//
// The design spans the memory levels (Design, Sizes): GEMVs and vector
// operators whose bytes lie in L1, L2, the L3 and DRAM (≥ 4× the LLC, from
// the topology or, where CPUID hides the L3, the knee of the profile's
// read bandwidth curves: probes.WithMeasuredLLC), decode attention over
// DRAM-sized KV and prefill-sized GEMMs. Each shape's calibration key is
// its class, the thread count that runs it and the level that bounds its
// uncalibrated prediction (roofline.Placed.Bound: L1, L2, L3, DRAM, or
// compute/ and the level holding the activations), so a fit on
// cache-resident GEMVs never applies to DRAM-sized ones; a key with fewer
// than 2 fit shapes stays uncalibrated, and the report says so, naming
// the model's operators that fall under such keys.
//
// The shapes are split deterministically into a fit half and a held-out
// half, stratified per calibration key (Split). On the fit half each key
// gets the parameters of t = fixed + t_roofline/efficiency by weighted
// least squares on the relative error (Fit: gonum's stat.LinearRegression
// of measured on predicted time, weights 1/measured²); the held-out half's
// relative errors |pred−meas|/meas before and after are summarized per
// class (p50, p90, max) and drawn as CDFs (PlotCDF, gonum/plot). Apply
// writes the parameters into the profile's calibration section
// (results.Calibration, schema bench.calibration/v2), which
// roofline.FromProfile applies to every prediction of those classes.
//
// calibrate imports only internal/noise (load average), kernels, kernels/gemm, kernels/pool, probes (the
// GEMM bench, the measured LLC), opbench (the attention sweep, which reaches engine), models,
// roofline and results; it must not import reports or sweep, even
// indirectly (the command writes its files), nor cmd. Units: seconds,
// FLOPs, bytes.
package calibrate
