package engine

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cpubench/bench/internal/numa"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
)

// Cross-NUMA tensor parallelism, NUMA policy tp (ArcLight §3.2–3.4,
// Figs. 4, 6, 8, 9).
//
// At load (tpInit) the pool's workers are cut into TPDegree thread groups
// (pool.View: one per NUMA node of the Model's CPUs, or consecutive equal
// shares when the degree is not the node count) and every decoder layer is
// partitioned over them (§3.2): group g owns query heads
// [g·H/d, (g+1)·H/d) and KV heads [g·KV/d, (g+1)·KV/d) (GQA groups stay
// whole since d divides both), W_q, W_k, W_v, W_gate and W_up are split by
// output rows (heads, and the intermediate dimension in d near-equal
// ranges), W_o and W_down by input columns, and each group's slice is
// packed as its own gemm.Weights by one of the group's own workers. Each
// group has its own KV cache for its KV heads, its own copy of the hidden
// state and its own activation buffers (tpBatch).
//
// A forward call (Batch.tpRun) is:
//
//   - Scatter: the embedding rows copied into every group's copy of the
//     hidden state, each group by its own workers (timed as embed).
//   - per decoder layer, one fork-join over every worker: each group runs
//     attn_norm → q/k/v_proj → qk_norm → rope → kv_write → attention (its
//     heads) → o_proj (its partial sum of the whole hidden vector), then
//     the attention Gather, then ffn_norm → gate/up_proj → silu_mul →
//     down_proj (partial) and the FFN Gather. Inside an operator a group's
//     workers share the work as the engine does (gemm blocks at the
//     backend's tile, rows of the norms and RoPE, attention jobs claimed
//     per (rows, KV head)).
//   - Gather (§3.3; attn_gather, ffn_gather): a global barrier (every
//     group's partial is complete), then every group adds the d partial
//     sums, in group order, to its own copy of the residual, its workers
//     over disjoint ranges of the hidden vector, and meets at the
//     barrier that Sync picks. Every group sums the same terms in the same
//     order, so the copies stay bit-identical; each writes only its own
//     copy (on its node) and reads the others' partials once.
//   - Double buffering (Fig. 4): the partials of o_proj and down_proj go to
//     two buffers per group, so a group that leaves the attention Gather
//     may write its down_proj partial while slower groups still read its
//     o_proj partial: the Gather needs one global barrier, not two.
//   - Synchronization (§3.4, Fig. 9): Sync A puts a global barrier (every
//     worker of every group) after every operator; Sync B a barrier of the
//     group's own workers, the global barriers being the Gathers' and the
//     fork-join at the layer's ends.
//   - After the last layer the final norm and the LM head run on every
//     worker, as without tp, on group 0's copy of the hidden state.
//
// Operator timers: worker 0 (the master, in group 0) times each operator
// from its start to the barrier after it: under Sync A the slowest group's
// time, under Sync B group 0's; a Gather's time includes waiting at its
// global barrier for the slowest group, which is where the groups'
// imbalance shows. An OpObserver (Batch.Observe) is called there too, on
// worker 0 inside the layer's fork-join: under Sync B other groups may be
// inside another operator when it runs.
//
// Memory placement (ArcLight §3.2: every tensor of a group in memory
// under its node): each group's packed weight panels, its KV caches (its
// KV heads, every slot and layer) and its activation buffers (its copy of
// the hidden state, the normed rows, q, k, v, the attention output, the
// FFN intermediates and both partial sums; tpBuf) come from one allocator
// (tpState.mem, numa_mem.go's numaMem) of mmap'ed memory bound to the
// node of the group's CPUs (mbind MPOL_BIND), and Model.NUMAPlacement
// samples where their pages went: the weights per operator, the KV caches
// and the activations per group. A Batch's buffers are freed when it is
// collected (runtime.AddCleanup) and the activations when a longer call
// regrows them; Model.Close frees everything. The buffers every group
// reads stay on the Go heap: the embedding table (the Scatter's source,
// the caller's Weights), the final norm's output and the logits (the
// Batch's, first touch) and the LM head (the Model's). Each group's
// copies of the norm weights are on the Go heap too, first written by
// one of its workers (allocFor), as is the per-worker attention scratch
// (allocated by the caller of NewBatch). Where the nodes are
// unknown (a group's CPUs on several nodes, no sysfs) or the kernel has
// no NUMA memory policy, the groups' panels, caches and activations go on
// the Go heap instead, each allocated and first written by one of its
// group's workers, so that the OS's first-touch policy puts them on the
// group's node, unverified (Model.Notes says why; NUMAPlacement is nil).
//
// Restrictions: fp32 weights, dense layers, placement cores, no weight
// layout policy, no PackPerCall and no ForcePipeline (prefill attention
// runs each job serially inside the group); anything else is an error
// naming it.

// tpState is a Model's tensor-parallel partition (nil without tp).
type tpState struct {
	sync   SyncMode
	groups []*pool.Group
	nodes  []int // node of each group's CPUs, -1: several or unknown
	gi, gl []int // per pool worker: its group and its local index in it

	heads, kvHeads int   // per group
	inter          []int // per group: the intermediate range [inter[g], inter[g+1])
	layers         [][]tpLayer

	gbar []*pool.Barrier // per group: its workers
	all  *pool.Barrier   // every worker

	// mem holds the groups' packed weight panels and their Batches' KV
	// caches and activations, each group's bound to its node (mbind; nil:
	// the Go heap, placed by first touch, where the nodes are unknown or
	// the kernel has no NUMA policy).
	mem *numaMem
}

// tpLayer is one group's share of a decoder layer.
type tpLayer struct {
	attnNorm, ffnNorm, qNorm, kNorm []float32 // replicated per group
	wq, wk, wv, gate, up            *gemm.Weights
	wo, down                        *gemm.Weights // partial sums: N = Dim, K = the group's columns
}

// TPGroup is one tensor-parallel thread group of a Model.
type TPGroup struct {
	// Workers are its pool workers, CPUs their CPUs (-1: not pinned).
	Workers, CPUs []int
	// Node is the NUMA node of its CPUs (-1: several, or unknown).
	Node int
	// Heads and KVHeads are the ranges [first, last+1) of query and KV
	// heads it owns; Intermediate its range of the FFN's intermediate
	// dimension.
	Heads, KVHeads, Intermediate [2]int
}

// TPInfo is a Model's tensor-parallel configuration (ArcLight §3).
type TPInfo struct {
	Degree int
	Sync   SyncMode
	Groups []TPGroup
}

// TP returns the Model's tensor-parallel configuration, nil unless its
// NUMA policy is tp.
func (m *Model) TP() *TPInfo {
	t := m.tp
	if t == nil {
		return nil
	}
	info := &TPInfo{Degree: len(t.groups), Sync: t.sync}
	for g, gr := range t.groups {
		info.Groups = append(info.Groups, TPGroup{Workers: gr.Workers(), CPUs: gr.CPUs(), Node: t.nodes[g],
			Heads: [2]int{g * t.heads, (g + 1) * t.heads}, KVHeads: [2]int{g * t.kvHeads, (g + 1) * t.kvHeads},
			Intermediate: [2]int{t.inter[g], t.inter[g+1]}})
	}
	return info
}

// String is one line: "degree 2, sync b; group 0: CPUs 0-1 (node 0), ...".
func (t *TPInfo) String() string {
	var gs []string
	for g, gr := range t.Groups {
		node := "several or unknown nodes"
		if gr.Node >= 0 {
			node = fmt.Sprintf("node %d", gr.Node)
		}
		gs = append(gs, fmt.Sprintf("group %d: CPUs %v (%s), heads %d–%d, KV heads %d–%d", g, gr.CPUs, node,
			gr.Heads[0], gr.Heads[1]-1, gr.KVHeads[0], gr.KVHeads[1]-1))
	}
	return fmt.Sprintf("degree %d, sync %s; %s", t.Degree, t.Sync, strings.Join(gs, "; "))
}

// tpCheck refuses the combinations tp does not run, naming them.
func tpCheck(w *Weights, o *Options) error {
	c := w.Config
	var bad []string
	if o.Placement != PlaceCores {
		bad = append(bad, "placement "+string(o.Placement)+" (cores only)")
	}
	if c.Experts > 0 {
		bad = append(bad, "MoE layers (dense only)")
	}
	if fs := w.WeightFormats(); len(fs) > 1 || fs[FormatFP32] == 0 {
		f, _ := w.MainWeightFormat()
		bad = append(bad, "weight format "+f+" (fp32 only)")
	}
	if o.WeightLayout != "" {
		bad = append(bad, "weight layout "+string(o.WeightLayout))
	}
	if o.PackPerCall {
		bad = append(bad, "the packing ablation")
	}
	if o.ForcePipeline {
		bad = append(bad, "the forced attention pipeline")
	}
	if len(bad) > 0 {
		return fmt.Errorf("engine: NUMA policy tp: unsupported with %s", strings.Join(bad, ", "))
	}
	return nil
}

// tpPartition cuts n workers on CPUs cpus (node of each CPU in nodeOf; a
// CPU it lacks is node -1) into d groups: d = 0 means one per node; a d
// equal to the number of nodes groups by node; any other d cuts the
// workers into d consecutive near-equal shares. It returns each group's
// worker indices and node (-1: several or unknown).
func tpPartition(cpus []int, nodeOf map[int]int, d int) (parts [][]int, nodes []int, err error) {
	node := func(cpu int) int {
		if n, ok := nodeOf[cpu]; ok {
			return n
		}
		return -1
	}
	var order []int
	byNode := map[int][]int{}
	for i, cpu := range cpus {
		n := node(cpu)
		if _, ok := byNode[n]; !ok {
			order = append(order, n)
		}
		byNode[n] = append(byNode[n], i)
	}
	if d == 0 {
		d = len(order)
	}
	if d < 1 || d > len(cpus) {
		return nil, nil, fmt.Errorf("engine: TP degree %d: must be between 1 and the %d threads", d, len(cpus))
	}
	if d == len(order) {
		for _, n := range order {
			parts = append(parts, byNode[n])
			nodes = append(nodes, n)
		}
		return parts, nodes, nil
	}
	for g := range d {
		part := make([]int, 0, len(cpus)/d+1)
		for i := g * len(cpus) / d; i < (g+1)*len(cpus)/d; i++ {
			part = append(part, i)
		}
		n := node(cpus[part[0]])
		for _, i := range part {
			if node(cpus[i]) != n {
				n = -1
			}
		}
		parts, nodes = append(parts, part), append(nodes, n)
	}
	return parts, nodes, nil
}

// tpInit builds the partition of policy tp on the started pool: the
// groups, then every layer's weight slices packed by the groups' own
// workers (each worker packs whole layers of its group, in parallel).
func (m *Model) tpInit(w *Weights) error {
	o := m.opts
	if err := tpCheck(w, &o); err != nil {
		return err
	}
	c := m.Config
	nodeOf, nodeErr := cpuNodes(sysNodeDir)
	cpus := m.pool.CPUs()
	parts, nodes, err := tpPartition(cpus, nodeOf, o.TPDegree)
	if err != nil {
		return err
	}
	d := len(parts)
	if err := checkTPDegree(c, d); err != nil {
		return err
	}
	if c.Intermediate < d {
		return fmt.Errorf("engine: TP degree %d: more than the %d intermediate columns", d, c.Intermediate)
	}
	groups, err := m.pool.View(parts)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	sync := o.Sync
	if sync == "" {
		sync = SyncB
	}
	t := &tpState{sync: sync, groups: groups, nodes: nodes, gi: make([]int, len(cpus)), gl: make([]int, len(cpus)),
		heads: c.Heads / d, kvHeads: c.KVHeads / d, layers: make([][]tpLayer, d), gbar: make([]*pool.Barrier, d)}
	spin := o.WorkerSpin
	for g, part := range parts {
		for l, wi := range part {
			t.gi[wi], t.gl[wi] = g, l
		}
		if t.gbar[g], err = pool.NewBarrier(len(part), spin); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		t.inter = append(t.inter, g*c.Intermediate/d)
		t.layers[g] = make([]tpLayer, c.Layers)
	}
	t.inter = append(t.inter, c.Intermediate)
	if t.all, err = pool.NewBarrier(len(cpus), spin); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if nodeErr != nil {
		m.Notes = append(m.Notes, "numa tp: NUMA nodes of the CPUs unknown ("+nodeErr.Error()+"): groups cut by worker order")
	}
	t.mem, err = tpMem(cpus, parts, nodes)
	if err != nil {
		m.Notes = append(m.Notes, "numa tp: weight panels, KV caches and activations on the Go heap, placed by first touch on each group's workers: "+err.Error())
	}

	// Every worker counts its layers' bytes into its own slot.
	per := make([]int64, len(cpus))
	tasks := make([]pool.Task, d)
	for g := range tasks {
		tasks[g] = pool.Task{Group: groups[g], F: func(local, n int) error {
			for li := local; li < c.Layers; li += n {
				if err := o.ctxErr(); err != nil {
					return err
				}
				b, err := m.tpPackLayer(t, g, li, &w.Layers[li])
				if err != nil {
					return fmt.Errorf("engine: model %s: layer %d, TP group %d: %w", c.Name, li, g, err)
				}
				per[parts[g][local]] += b
			}
			return nil
		}}
	}
	err = m.do(func(ms *pool.Master) error {
		_, err := ms.RunGroups(tasks...)
		return err
	})
	if err != nil {
		return err
	}
	for _, b := range per {
		m.WeightBytes += b
	}
	m.tp = t
	m.Notes = append(m.Notes, "numa tp: "+m.TP().String())
	return nil
}

// allocFor returns n zeroed floats for group g's copy of a norm weight
// vector, on the Go heap: it is first written by one of the group's own
// workers (tpPackLayer), so under the OS's first-touch policy its pages
// land on the node of the group's CPUs (a few KiB per layer, read once per
// operator; not reported). The KV caches and activations come from
// allocBuf, the weight panels from tpMem's allocator.
func (t *tpState) allocFor(g, n int) []float32 {
	_ = g
	return make([]float32, n)
}

// tpWeightClass names a tp weight slice's placement class by its
// operator (Model.NUMAPlacement).
var tpWeightClass = map[string]string{"wq": OpQProj, "wk": OpKProj, "wv": OpVProj, "wo": OpOProj,
	"gate": OpGateProj, "up": OpUpProj, "down": OpDownProj}

// tpMem is the allocator of tp's weight panels, KV caches and
// activations: each group's bound to the node of its CPUs. The error says
// why there is none (a group whose CPUs span several nodes or an unknown
// one, no NUMA policy in this kernel); they then go on the Go heap.
func tpMem(cpus []int, parts [][]int, nodes []int) (*numaMem, error) {
	if err := numa.Available(); err != nil {
		return nil, err
	}
	nm := &numaMem{policy: NUMATP, workerNode: make([]int, len(cpus)), ps: os.Getpagesize(), bufs: map[*byte]*numaBuf{}}
	for g, part := range parts {
		if nodes[g] < 0 {
			return nil, fmt.Errorf("group %d's CPUs are not on one known node", g)
		}
		for _, w := range part {
			nm.workerNode[w] = nodes[g]
		}
		if !slices.Contains(nm.nodes, nodes[g]) {
			nm.nodes = append(nm.nodes, nodes[g])
		}
	}
	slices.Sort(nm.nodes)
	return nm, nil
}

// tpPackLayer packs group g's share of layer li's weights for the cores
// backend, on the calling worker (one of g's), copies its norm weights
// (allocFor), and returns the bytes as WeightBytes counts them (the
// source tensor's share and its packed copy, 4 bytes each per value).
func (m *Model) tpPackLayer(t *tpState, g, li int, lw *LayerWeights) (int64, error) {
	c := m.Config
	d, hd := c.Dim, c.HeadDim
	h0, h1 := g*t.heads*hd, (g+1)*t.heads*hd
	k0, k1 := g*t.kvHeads*hd, (g+1)*t.kvHeads*hd
	i0, i1 := t.inter[g], t.inter[g+1]
	var bytes int64
	rows := func(src []float32, r0, r1, k int) []float32 { // rows [r0, r1) of an N×k matrix, in place
		return src[r0*k : r1*k]
	}
	cols := func(src []float32, n, k, c0, c1 int) []float32 { // columns [c0, c1) of an n×k matrix, a temporary copy
		dst := make([]float32, n*(c1-c0))
		for r := range n {
			copy(dst[r*(c1-c0):(r+1)*(c1-c0)], src[r*k+c0:r*k+c1])
		}
		return dst
	}
	vec := func(src []float32) []float32 {
		if src == nil {
			return nil
		}
		dst := t.allocFor(g, len(src))
		copy(dst, src)
		bytes += 4 * int64(len(dst))
		return dst
	}
	var err error
	pack := func(name string, data []float32, n, k int) *gemm.Weights {
		if err != nil {
			return nil
		}
		var pw *gemm.Weights
		if t.mem != nil {
			// The panels in memory bound to the group's node (ArcLight
			// §3.2: every TP tensor in a buffer under its node).
			var fl int
			var buf []float32
			if fl, err = gemm.PanelFloatsFP32(m.Backend, n, k); err == nil {
				buf, err = t.mem.alloc(tpWeightClass[name], fl, []numa.Span{{Off: 0, End: 4 * fl, Node: t.nodes[g]}})
			}
			if err == nil {
				pw, err = gemm.PackFP32Into(m.Backend, buf, data, n, k)
			}
		} else {
			pw, err = gemm.PackFP32(m.Backend, data, n, k)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", tensor{name: name, layer: li}, err)
			return nil
		}
		bytes += 8 * int64(len(data))
		return pw
	}
	L := &t.layers[g][li]
	L.attnNorm, L.ffnNorm, L.qNorm, L.kNorm = vec(lw.AttnNorm), vec(lw.FFNNorm), vec(lw.QNorm), vec(lw.KNorm)
	L.wq = pack("wq", rows(lw.Wq, h0, h1, d), h1-h0, d)
	L.wk = pack("wk", rows(lw.Wk, k0, k1, d), k1-k0, d)
	L.wv = pack("wv", rows(lw.Wv, k0, k1, d), k1-k0, d)
	L.wo = pack("wo", cols(lw.Wo, d, c.QDim(), h0, h1), d, h1-h0)
	if i1 > i0 {
		L.gate = pack("gate", rows(lw.Gate, i0, i1, d), i1-i0, d)
		L.up = pack("up", rows(lw.Up, i0, i1, d), i1-i0, d)
		L.down = pack("down", cols(lw.Down, d, c.Intermediate, i0, i1), d, i1-i0)
	}
	return bytes, err
}

// tpTimeLinear is TimeLinear of a partitioned operator under tp: every
// group runs its slice of op concurrently on its workers, as the forward
// pass does (without the Gather).
func (m *Model) tpTimeLinear(li int, op string, M, reps int) (float64, error) {
	t := m.tp
	pick := func(L *tpLayer) *gemm.Weights {
		return map[string]*gemm.Weights{OpQProj: L.wq, OpKProj: L.wk, OpVProj: L.wv, OpOProj: L.wo,
			OpGateProj: L.gate, OpUpProj: L.up, OpDownProj: L.down}[op]
	}
	if pick(&t.layers[0][li]) == nil {
		return 0, fmt.Errorf("engine: TimeLinear: layer %d has no linear operator %q under NUMA policy tp", li, op)
	}
	xs, ys := make([][]float32, len(t.groups)), make([][]float32, len(t.groups))
	for g := range t.groups {
		if w := pick(&t.layers[g][li]); w != nil {
			xs[g], ys[g] = make([]float32, M*w.K), make([]float32, M*w.N)
			for i := range xs[g] {
				xs[g][i] = float32(i%13-6) * 0.01
			}
		}
	}
	times := make([]float64, reps)
	tile := m.Backend.Tile()
	err := m.do(func(ms *pool.Master) error {
		for i := range times {
			if err := m.opts.ctxErr(); err != nil {
				return err
			}
			st := time.Now()
			err := ms.Run(m.all, func(local, n int) error {
				wi := m.all.Workers()[local]
				g, gl := t.gi[wi], t.gl[wi]
				w := pick(&t.layers[g][li])
				if w == nil {
					return nil
				}
				r := pool.Block(pool.Region{M1: M, N1: w.N}, tile, t.groups[g].Size(), gl)
				if r.Empty() {
					return nil
				}
				return w.Block(ys[g], w.N, xs[g], w.K, r.M0, r.M1, r.N0, r.N1, m.scratches[wi])
			})
			if err != nil {
				return err
			}
			times[i] = time.Since(st).Seconds()
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}
