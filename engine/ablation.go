package engine

import (
	"fmt"
	"strings"
)

// The vocabulary of placements and ablations the sweep and bench run use:
// Placement (model.go) and Ablation, with which combinations the engine
// runs.

// Ablation is one of SMEPilot §5.4's ablations: a part of the system
// turned off (Options' NoPartition, PackPerCall, KVPackPerCall,
// NoPipeline).
type Ablation string

// Ablations.
const (
	// AblatePartition: no tile partitioning, a GEMM placed on mixed runs
	// whole on one group (Options.NoPartition).
	AblatePartition Ablation = "partition"
	// AblatePacking: weights packed on every call instead of once at load
	// (Options.PackPerCall).
	AblatePacking Ablation = "packing"
	// AblateKVPacking: the KV cache kept row-major, every K/V tile packed
	// inside attention instead of written packed by its producer
	// (Options.KVPackPerCall, SMEPilot §4.3).
	AblateKVPacking Ablation = "kv-packing"
	// AblatePipeline: prefill attention's stages run serially per job
	// instead of the phase-aware pipeline of a matrix and a vector worker
	// (Options.NoPipeline, SMEPilot §4.2, Fig. 6). The outputs are
	// bit-identical; only the time changes.
	AblatePipeline Ablation = "pipeline"
)

// Ablations lists the ablations in the order flags show them.
func Ablations() []Ablation {
	return []Ablation{AblatePartition, AblatePacking, AblateKVPacking, AblatePipeline}
}

// AblationNames are the ablations' names, for flag help and errors.
func AblationNames() []string {
	var s []string
	for _, a := range Ablations() {
		s = append(s, string(a))
	}
	return s
}

// PlacementNames are the placements' names, for flag help and errors.
func PlacementNames() []string {
	var s []string
	for _, p := range Placements() {
		s = append(s, string(p))
	}
	return s
}

// ParseAblation reads an ablation name; the error names it and the valid
// ones.
func ParseAblation(s string) (Ablation, error) {
	for _, a := range Ablations() {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown ablation %q (valid: %s)", s, strings.Join(AblationNames(), ", "))
}

// Apply turns the ablation's part of the system off in o ("" is none).
func (a Ablation) Apply(o *Options) {
	switch a {
	case AblatePartition:
		o.NoPartition = true
	case AblatePacking:
		o.PackPerCall = true
	case AblateKVPacking:
		o.KVPackPerCall = true
	case AblatePipeline:
		o.NoPipeline = true
	}
}

// WithQuantized reports whether the engine runs the ablation with
// quantized weights ("" too): quantized weights are packed once, by
// their loader, and never partitioned, so only kv-packing and pipeline
// (attention's, whatever the weights) apply.
func (a Ablation) WithQuantized() bool {
	return a == "" || a == AblateKVPacking || a == AblatePipeline
}

// Partitions reports whether the placement splits a GEMM between the
// matrix target and the cores (mixed, and auto where its plan says
// mixed): the partition ablation applies only to these.
func (p Placement) Partitions() bool { return p == PlaceMixed || p == PlaceAuto }

// WithQuantized reports whether the engine runs quantized weights under
// the placement: on the cores' quant backend, so cores and auto (which
// then means cores).
func (p Placement) WithQuantized() bool { return p == PlaceCores || p == PlaceAuto }
