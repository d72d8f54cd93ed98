package roofline

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// NUMA policies as the engine names them (engine.NUMAPolicy; ArcLight
// §2.3–3.4). The model of each is in NUMABandwidth.
const (
	NUMAOS         = "os"
	NUMAInterleave = "interleave"
	NUMALocal      = "local"
	NUMATP         = "tp"
)

// NUMAPolicies lists the policies NUMABandwidth models.
func NUMAPolicies() []string { return []string{NUMAOS, NUMAInterleave, NUMALocal, NUMATP} }

// NUMABandwidth is the weight-streaming roof of a decode step, in GB/s,
// when the threads are spread evenly over the first n nodes of the
// machine's NUMA matrix (ArcLight Table 1: G[i][j] the read bandwidth of
// node i's cores from node j's memory) and each node's threads read an
// equal 1/n of every weight matrix (the engine's static split of a GEMV's
// output rows). W bytes take W / roof seconds, where per policy:
//
//   - os: the weights lie where the loading thread touched them first, node
//     0 (this engine packs them on one thread). Node i reads W/n from node
//     0 at G[i][0], and node 0's memory serves all W at most at G[0][0]:
//     t = max(maxᵢ (W/n)/G[i][0], W/G[0][0]).
//   - interleave: pages round-robin over the n nodes, so node i reads
//     W/n² from every node j one after another: tᵢ = Σⱼ (W/n²)/G[i][j];
//     memory node j serves W/n: t = max(maxᵢ tᵢ, maxⱼ (W/n)/G[j][j]).
//   - local and tp: node i's share on node i: t = maxᵢ (W/n)/G[i][i]
//     (ArcLight §3.2: TP "effectively isolat[es] cross-node memory
//     access"). tp adds its Gathers' synchronization (NUMAPredict).
//
// Table 1 was measured one core-memory pair at a time; reads from
// several nodes are taken here as serial, not overlapped (a lower bound
// on the roof). The error names a policy the model lacks, a machine
// without a NUMA matrix, or n outside 1..nodes.
func (m *Machine) NUMABandwidth(policy string, n int) (float64, error) {
	g, err := m.numaMatrix(n)
	if err != nil {
		return 0, err
	}
	const w = 1.0 // bytes: the roof is 1/t for one byte
	var t float64
	switch policy {
	case NUMAOS:
		t = w / g[0][0]
		for i := range n {
			t = math.Max(t, w/float64(n)/g[i][0])
		}
	case NUMAInterleave:
		for i := range n {
			var ti float64
			for j := range n {
				ti += w / float64(n*n) / g[i][j]
			}
			t = math.Max(t, math.Max(ti, w/float64(n)/g[i][i]))
		}
	case NUMALocal, NUMATP:
		for i := range n {
			t = math.Max(t, w/float64(n)/g[i][i])
		}
	default:
		return 0, fmt.Errorf("roofline: NUMA policy %q: want one of %s", policy, strings.Join(NUMAPolicies(), ", "))
	}
	return w / t, nil
}

// numaMatrix is the first n×n block of the machine's NUMA matrix,
// checked: every entry positive.
func (m *Machine) numaMatrix(n int) ([][]float64, error) {
	if m.NUMA == nil || len(m.NUMA.GBps) == 0 {
		return nil, fmt.Errorf("roofline: machine %s has no NUMA matrix (bench probe measures one on a machine with several nodes; published: kunpeng-920)", m.Name)
	}
	nodes := len(m.NUMA.GBps)
	if n < 1 || n > nodes {
		return nil, fmt.Errorf("roofline: %d NUMA nodes: machine %s has %d (want 1..%d)", n, m.Name, nodes, nodes)
	}
	g := make([][]float64, n)
	for i := range n {
		if len(m.NUMA.GBps[i]) < n {
			return nil, fmt.Errorf("roofline: machine %s: NUMA matrix row %d has %d entries, want %d", m.Name, i, len(m.NUMA.GBps[i]), nodes)
		}
		g[i] = m.NUMA.GBps[i][:n]
		for j, v := range g[i] {
			if !(v > 0) {
				return nil, fmt.Errorf("roofline: machine %s: NUMA bandwidth node %d → %d is %g GB/s, want > 0", m.Name, i, j, v)
			}
		}
	}
	return g, nil
}

// NUMAPrediction is one policy's predicted decode step on n nodes.
type NUMAPrediction struct {
	Policy string `json:"policy"`
	Nodes  int    `json:"nodes"`
	// Sync is the TP synchronization ("a" or "b"; "" for other policies).
	Sync string `json:"sync,omitempty"`
	// RoofGBps is NUMABandwidth: the weight-streaming roof.
	RoofGBps float64 `json:"roof_gbps"`
	// MemoryS is the decode step's bytes over the roof; ComputeS its FLOPs
	// over n nodes' ceiling (0 when the machine has none at the
	// precision); SyncS the global barriers' cost (tp: Sync A one per
	// operator, Sync B one per Gather; 0 when the machine has no measured
	// barrier cost).
	MemoryS  float64 `json:"memory_s"`
	ComputeS float64 `json:"compute_s"`
	SyncS    float64 `json:"sync_s"`
	// TPOTS = max(MemoryS, ComputeS) + SyncS, seconds per decode step.
	TPOTS float64 `json:"tpot_s"`
	// TokPerS is Batch / TPOTS; Speedup is this policy's TokPerS over
	// os's on the same nodes.
	TokPerS float64 `json:"tok_per_s"`
	Speedup float64 `json:"speedup_vs_os"`
}

// NUMAPredict predicts a decode step (Request r, Phase Decode) of arch on
// the first n nodes under every policy of NUMAPolicies (tp under Sync A
// and Sync B), from the machine's NUMA matrix (NUMABandwidth), its cores'
// ceiling at prec per node (scaled by n; absent: memory only) and its
// fixed cost per parallel call at its largest measured thread count as
// the cost of one global barrier (absent: 0). Notes say which of those
// the machine lacks. Whole-step model: every byte of the step (weights,
// activations, KV cache) streams at the policy's roof; each TP Gather sums
// n partial vectors of Dim floats (bytes negligible beside the weights,
// so only its barrier is counted). Errors: those of NUMABandwidth and of
// BuildCatalog.
func (m *Machine) NUMAPredict(arch Arch, r Request, prec string, n int) ([]NUMAPrediction, []string, error) {
	if r.Phase != Decode {
		return nil, nil, fmt.Errorf("roofline: NUMA prediction of phase %s: decode only (ArcLight §4 measures decode)", r.Phase)
	}
	c, err := BuildCatalog(arch, r)
	if err != nil {
		return nil, nil, err
	}
	tot := c.ModelTotals()
	var notes []string
	var pi float64
	if t, ok := m.Target(KindCores); ok {
		pi = t.Ceiling(prec) * float64(n)
	}
	if pi <= 0 {
		notes = append(notes, fmt.Sprintf("machine %s has no %s compute ceiling: memory time only", m.Name, prec))
	}
	var barrier float64
	if fc := m.FixedCosts; fc != nil && len(fc.Points) > 0 {
		p := slices.MaxFunc(fc.Points, func(a, b FixedCost) int { return a.Threads - b.Threads })
		barrier = p.CallSeconds
		notes = append(notes, fmt.Sprintf("one global barrier = one parallel call at %d threads, %.3g µs (the profile's dispatch section; a cross-node barrier costs more)", p.Threads, barrier*1e6))
	} else {
		notes = append(notes, fmt.Sprintf("machine %s has no measured barrier cost: tp's Sync A and Sync B predict the same", m.Name))
	}
	// Global barriers per decode step under tp (ArcLight §3.4, Fig. 9):
	// Sync A after every operator of every layer; Sync B at the two
	// Gathers of a layer (after W_o and W_down).
	var opsPerStep float64
	for _, l := range c.Layers {
		opsPerStep += float64(l.Count * len(l.Ops))
	}
	gathers := 2 * float64(arch.Layers)
	var out []NUMAPrediction
	var osTok float64
	for _, pol := range NUMAPolicies() {
		roof, err := m.NUMABandwidth(pol, n)
		if err != nil {
			return nil, nil, err
		}
		p := NUMAPrediction{Policy: pol, Nodes: n, RoofGBps: roof, MemoryS: tot.Bytes.Total() / (roof * 1e9)}
		if pi > 0 {
			p.ComputeS = tot.FLOPs / (pi * 1e9)
		}
		syncs := []struct {
			name string
			n    float64
		}{{"", 0}}
		if pol == NUMATP && n > 1 {
			syncs = []struct {
				name string
				n    float64
			}{{"a", opsPerStep}, {"b", gathers}}
		}
		for _, s := range syncs {
			q := p
			q.Sync, q.SyncS = s.name, s.n*barrier
			q.TPOTS = math.Max(q.MemoryS, q.ComputeS) + q.SyncS
			q.TokPerS = float64(max(r.Batch, 1)) / q.TPOTS
			if pol == NUMAOS {
				osTok = q.TokPerS
			}
			q.Speedup = q.TokPerS / osTok
			out = append(out, q)
		}
	}
	return out, notes, nil
}
