package roofline

// Drifted returns a copy of m as a run's re-measurements found the host:
// its DRAM figures (the DRAM level roof at every thread count, the
// targets' β, the DRAM entries of Roofs, the GEMV weight rates of the
// attained-GEMM table) scaled by dram, and its compute figures (the
// targets' ceilings, the attained-GEMM table's GEMM points, the non-linear
// kernels' rates) scaled by compute. `bench run` re-measures the profile's
// DRAM read roof and attained GEMM after its timed phases
// (probes.CheckDRAMRoof, probes.CheckGEMM); a prediction on the drifted
// machine tells the model's own error apart from the host's drift on a
// shared host. Cache roofs, fixed costs and the calibration are kept (not
// re-measured). A factor that is not > 0 leaves its part unchanged; m is
// not modified.
func (m *Machine) Drifted(dram, compute float64) *Machine {
	c := *m
	if !(dram > 0) {
		dram = 1
	}
	if !(compute > 0) {
		compute = 1
	}
	c.Targets = make([]Target, len(m.Targets))
	for i, t := range m.Targets {
		t.BandwidthGBps *= dram
		t.CeilingsGFLOPS = scaleMap(t.CeilingsGFLOPS, compute)
		c.Targets[i] = t
	}
	c.Roofs = append([]Roof(nil), m.Roofs...)
	for i := range c.Roofs {
		if c.Roofs[i].Level == "DRAM" {
			c.Roofs[i].GBps *= dram
		}
	}
	c.LevelRoofs = append([]LevelRoof(nil), m.LevelRoofs...)
	for i := range c.LevelRoofs {
		if c.LevelRoofs[i].Level == "DRAM" {
			c.LevelRoofs[i].GBps *= dram
			c.LevelRoofs[i].WriteGBps *= dram
		}
	}
	if m.GEMMTable != nil {
		t := *m.GEMMTable
		t.GEMM = append([]GEMMPoint(nil), t.GEMM...)
		for i := range t.GEMM {
			t.GEMM[i].GFLOPS *= compute
		}
		t.GEMV = append([]GEMMPoint(nil), t.GEMV...)
		for i := range t.GEMV {
			t.GEMV[i].GFLOPS *= dram // weight GB/s
		}
		c.GEMMTable = &t
	}
	c.Nonlinear = m.Nonlinear.scaled(compute)
	return &c
}

func scaleMap(in map[string]float64, f float64) map[string]float64 {
	if in == nil {
		return nil
	}
	out := make(map[string]float64, len(in))
	for k, v := range in {
		out[k] = v * f
	}
	return out
}
