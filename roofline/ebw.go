package roofline

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cpubench/bench/results"
)

// UpConvertBound is the regime of a quantized linear operator on the cores
// whose weight roof is the up-convert-and-compute sequence rather than DRAM:
// some core type has B/γ < β (low-bit GEMV paper §III-F, Eq. 3), so the
// chip's effective bandwidth Σ cores · ebw · f is below β. The name is
// results.LimitUpConvert + "-bound", the probe's limit with the same suffix
// as MemoryBound.
const UpConvertBound Regime = Regime(results.LimitUpConvert + "-bound")

// QuantRoofType is Eq. 3 for one core type: per core ebw = min(β, B/γ)
// bytes/cycle, and that at the core type's clock in GB/s.
type QuantRoofType struct {
	Name  string  `json:"name"`
	Cores int     `json:"cores"`
	GHz   float64 `json:"ghz"`
	// Beta is β per core in bytes/cycle; BetaFrom says whether it is the
	// machine file's figure ("published" or "probe") or the equal share of
	// the target's bandwidth ("derived").
	Beta     float64 `json:"beta_bytes_per_cycle"`
	BetaFrom string  `json:"beta_from"`
	// Gamma is γ in cycles per output vector; UpConvert is B/γ in
	// bytes/cycle.
	Gamma     float64 `json:"gamma_cycles"`
	UpConvert float64 `json:"upconvert_bytes_per_cycle"`
	// EBW = min(Beta, UpConvert) bytes/cycle; Limit is results.LimitMemory
	// or results.LimitUpConvert.
	EBW   float64 `json:"ebw_bytes_per_cycle"`
	Limit string  `json:"limit"`
	// PerCoreGBps is EBW · GHz in the target's GB (GBBytes), GBps that
	// times Cores.
	PerCoreGBps float64 `json:"per_core_gbps"`
	GBps        float64 `json:"gbps"`
	// Measured is the attained weight bytes/cycle per core of this
	// format's GEMV (probe profiles; 0 when not measured).
	Measured float64 `json:"measured_bytes_per_cycle,omitempty"`
}

// QuantRoof is a quantized GEMV's memory roof on a cores target: the
// low-bit GEMV paper's Eq. 3 per core type, summed over the chip as its
// §IV-B does (Σ_types cores · ebw · f), and capped at the target's
// bandwidth β (the sum of rounded published β can exceed it).
type QuantRoof struct {
	Format string `json:"format"`
	// BytesPerVector is B, the bytes read per output vector.
	BytesPerVector float64 `json:"bytes_per_vector"`
	// GBBytes is the bytes in one of the target's GB (1e9, or 2^30 for the
	// low-bit paper's figures).
	GBBytes float64         `json:"gb_bytes"`
	Types   []QuantRoofType `json:"core_types"`
	// SumGBps is Σ cores · ebw · f; GBps = min(SumGBps, BandwidthGBps) is
	// the roof, in the target's GB/s.
	SumGBps       float64 `json:"sum_gbps"`
	GBps          float64 `json:"gbps"`
	BandwidthGBps float64 `json:"bandwidth_gbps"`
	// Limit is results.LimitUpConvert when some core type is up-convert
	// limited (GBps below the bandwidth), else results.LimitMemory.
	Limit  string `json:"limit"`
	Source string `json:"source,omitempty"`
}

// gbBytes is the target's GB in bytes (default 1e9).
func (t Target) gbBytes() float64 {
	if t.GBBytes > 0 {
		return t.GBBytes
	}
	return 1e9
}

// QuantFormats lists the weight formats for which every core type of the
// target has a γ and the target a B, sorted.
func (t Target) QuantFormats() []string {
	if len(t.CoreTypes) == 0 {
		return nil
	}
	var out []string
	for f, b := range t.BytesPerVector {
		ok := b > 0
		for _, ct := range t.CoreTypes {
			if !(ct.GammaCycles[f] > 0) {
				ok = false
			}
		}
		if ok {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// QuantRoof computes the effective-bandwidth roof of weight format f on
// the target (low-bit GEMV paper §III-F Eq. 3 per core type, §IV-B summed):
// per core type ebw = min(β, B/γ) bytes/cycle, per core ebw · f_GHz · 1e9 /
// GBBytes GB/s, total Σ cores · that, capped at BandwidthGBps. β is the
// core type's own figure when given, else the equal share BandwidthGBps ·
// GBBytes / (all cores · f). ok is false when the target has no γ for f
// on every core type.
func (t Target) QuantRoof(f string) (QuantRoof, bool) {
	b := t.BytesPerVector[f]
	if len(t.CoreTypes) == 0 || !(b > 0) {
		return QuantRoof{}, false
	}
	gb := t.gbBytes()
	n := 0
	for _, ct := range t.CoreTypes {
		if !(ct.GammaCycles[f] > 0) {
			return QuantRoof{}, false
		}
		n += ct.Cores
	}
	q := QuantRoof{Format: f, BytesPerVector: b, GBBytes: gb, BandwidthGBps: t.BandwidthGBps, Limit: results.LimitMemory}
	for _, ct := range t.CoreTypes {
		r := QuantRoofType{Name: ct.Name, Cores: ct.Cores, GHz: ct.GHz, Beta: ct.BetaBytesPerCycle, BetaFrom: "published",
			Gamma: ct.GammaCycles[f], Measured: ct.MeasuredBytesPerCycle[f]}
		if strings.Contains(ct.Source, "probe") {
			r.BetaFrom = "probe"
		}
		if !(r.Beta > 0) {
			r.Beta, r.BetaFrom = PerCoreBytesPerCycle(t.BandwidthGBps, n, ct.GHz, gb), "derived"
		}
		r.UpConvert = b / r.Gamma
		r.EBW, r.Limit = EffectiveBandwidth(r.Beta, b, r.Gamma), results.LimitMemory
		if r.UpConvert < r.Beta {
			r.Limit, q.Limit = results.LimitUpConvert, results.LimitUpConvert
		}
		r.PerCoreGBps = r.EBW * ct.GHz * 1e9 / gb
		r.GBps = r.PerCoreGBps * float64(ct.Cores)
		q.SumGBps += r.GBps
		q.Types = append(q.Types, r)
	}
	q.GBps = math.Min(q.SumGBps, t.BandwidthGBps)
	return q, true
}

// fillEffectiveBandwidth sets the cores target's EffectiveGWeightsPerS for
// every format its core types have a γ for and that it does not list
// already: the QuantRoof in GB/s over the catalog's bytes per weight of the
// format (DTypeBytes), so that applyEffectiveBandwidth bounds the format's
// linear operators by it.
func (m *Machine) fillEffectiveBandwidth() {
	for i := range m.Targets {
		t := &m.Targets[i]
		for _, f := range t.QuantFormats() {
			if _, ok := t.EffectiveGWeightsPerS[f]; ok {
				continue
			}
			bpw, err := DTypeBytes(f)
			if err != nil || !(bpw > 0) {
				continue
			}
			q, _ := t.QuantRoof(f)
			if t.EffectiveGWeightsPerS == nil {
				t.EffectiveGWeightsPerS = map[string]float64{}
			}
			t.EffectiveGWeightsPerS[f] = q.GBps / bpw
		}
	}
}

// validateCoreTypes checks a target's v2 keys; where names the target in
// messages.
func validateCoreTypes(where string, t Target) error {
	if len(t.CoreTypes) == 0 && len(t.BytesPerVector) == 0 && t.GBBytes == 0 {
		return nil
	}
	if t.Kind != KindCores {
		return fmt.Errorf("%s: core_types, bytes_per_vector and gb_bytes only apply to kind cores", where)
	}
	if t.GBBytes != 0 && t.GBBytes != 1e9 && t.GBBytes != GiB {
		return fmt.Errorf("%s: gb_bytes %v: must be 1000000000 or 1073741824", where, t.GBBytes)
	}
	for f, b := range t.BytesPerVector {
		if !(b > 0) || math.IsInf(b, 0) {
			return fmt.Errorf("%s: bytes_per_vector[%q] = %v: must be > 0", where, f, b)
		}
	}
	seen := map[string]bool{}
	for i, ct := range t.CoreTypes {
		w := fmt.Sprintf("%s: core_types[%d]", where, i)
		if ct.Name == "" {
			return fmt.Errorf("%s: missing key \"name\"", w)
		}
		if seen[ct.Name] {
			return fmt.Errorf("%s: duplicate core type %q", w, ct.Name)
		}
		seen[ct.Name] = true
		if ct.Cores < 1 {
			return fmt.Errorf("%s (%s): cores %d: must be ≥ 1", w, ct.Name, ct.Cores)
		}
		if !(ct.GHz > 0) || math.IsInf(ct.GHz, 0) {
			return fmt.Errorf("%s (%s): ghz %v: must be > 0", w, ct.Name, ct.GHz)
		}
		if ct.BetaBytesPerCycle < 0 || math.IsNaN(ct.BetaBytesPerCycle) || math.IsInf(ct.BetaBytesPerCycle, 0) {
			return fmt.Errorf("%s (%s): beta_bytes_per_cycle %v: must be ≥ 0 (0: derived)", w, ct.Name, ct.BetaBytesPerCycle)
		}
		for f, g := range ct.GammaCycles {
			if !(g > 0) || math.IsInf(g, 0) {
				return fmt.Errorf("%s (%s): gamma_cycles[%q] = %v: must be > 0", w, ct.Name, f, g)
			}
			if !(t.BytesPerVector[f] > 0) {
				return fmt.Errorf("%s (%s): gamma_cycles[%q] has no bytes_per_vector[%q] (B of Eq. 3)", w, ct.Name, f, f)
			}
		}
	}
	return nil
}

// UpConvertBoundNote says in words which regime the roof gives the
// format's GEMVs.
func UpConvertBoundNote(q *QuantRoof) string {
	if q.Limit == results.LimitUpConvert {
		var lim []string
		for _, t := range q.Types {
			if t.Limit == results.LimitUpConvert {
				lim = append(lim, t.Name)
			}
		}
		return fmt.Sprintf("B/γ < β on %s cores: the GEMVs are %s", strings.Join(lim, ", "), UpConvertBound)
	}
	return fmt.Sprintf("β ≤ B/γ on every core type: the GEMVs are %s", MemoryBound)
}
