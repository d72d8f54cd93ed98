package engine

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/cpubench/bench/internal/numa"
	"github.com/cpubench/bench/kernels/gemm"
	"github.com/cpubench/bench/kernels/pool"
)

// NUMA memory of policies interleave and local (ArcLight §2.3–2.4, Figs. 7,
// 10, 11): the Model's weights, its Batches' KV caches and activation
// buffers come from one allocator (numaMem) of mmap'ed memory (package
// internal/numa), never the Go heap, whose pages the runtime reuses
// wherever they were first touched. Under os nothing here runs: the Model
// keeps Go slices exactly as before. Policy tp uses the same allocator for
// its groups' weight panels, KV caches and activations, each group's bound
// to its node (tp.go, tp_batch.go).
//
// What lives where:
//
//   - Weights: each linear's packed panels (the cores backend's fp32 panel
//     layout, gemm.PanelBlock; the Model keeps no other copy of them: the
//     row-major source stays the caller's Weights). interleave: page by
//     page over the nodes of the Model's CPUs (MPOL_INTERLEAVE). local:
//     each worker's static share, the NR-row panels of the output rows it
//     computes in decode (pool.Block over N at the backend's tile, as
//     runLinear cuts a GEMV or a GEMM with M ≤ N), bound to the node of its
//     CPU (MPOL_BIND). Shares are not page-aligned: a page two shares touch
//     goes to the worker that reads more of it (numa.PageOwners), so at
//     most one page at each end of a share is remote. A prefill GEMM with
//     M > N is cut along M instead: every worker reads every panel.
//   - KV caches (per slot and layer, K and V): interleaved over the nodes
//     under both policies. Decode attention's jobs (one slot's rows × one
//     KV head) go to whichever worker claims one next (Batch.attention), so
//     no worker owns a slot's cache and every node's workers read every
//     cache; interleaving spreads those reads over every node's memory
//     controller rather than loading one node's. (Under tp the heads, and
//     so their caches, have static owners, ArcLight §3.2: each group's
//     caches and activations are bound to its node; see tp.go.)
//   - Activations (Batch.grow's buffers and the logits): interleave:
//     interleaved. local: each buffer bound page by page to the node of its
//     writer: a linear's output (q, k, v, o/down, gate, up, logits: row r's
//     columns [n0, n1) are written by the worker whose share of W they are)
//     by the same N cut as the weights; x and xb (residual, norm) by the
//     rows each worker's share of Batch.par writes (one row, as in decode
//     of one sequence: worker 0's node); the attention output, written by
//     attention's dynamic jobs, interleaved.
//
// The embedding table and the norm weights stay the caller's Weights'
// slices (the gather reads one row per token). Every buffer is freed by
// Model.Close; a Batch's are also freed when the Batch is garbage
// collected (runtime.AddCleanup; the pool's workers hold their last task,
// and so its Batch, until the next forward call), and the activation
// buffers when a longer call regrows them. Slices a Batch returned
// (logits) are invalid after Close or a regrow.
//
// Model.NUMAPlacement checks where the pages went, per tensor class.

// numaMem is the allocator of a Model under interleave or local.
type numaMem struct {
	policy     NUMAPolicy
	nodes      []int // distinct nodes of the workers' CPUs, ascending
	workerNode []int // per pool worker
	ps         int   // page size

	mu   sync.Mutex
	bufs map[*byte]*numaBuf
}

// numaBuf is one mmap'ed buffer and where its pages were meant to go.
type numaBuf struct {
	b      []byte
	class  string // tensor class: an operator name, numaKV or numaAct
	group  int    // tp: the thread group whose KV cache or activations it is; -1: none
	owners []int  // bound: node per page; nil: interleaved over nodes
}

// The tensor classes of buffers that are not weights.
const (
	numaKV  = "kv_cache"
	numaAct = "activations"
)

// numaInit checks that the Model can run under o.NUMA and sets up its
// allocator (nil under os). Called after the pool started.
func (m *Model) numaInit(o Options, w *Weights) error {
	p := o.NUMA
	if p == "" || p == NUMAOS || p == NUMATP {
		return nil
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("engine: NUMA policy %s: "+format, append([]any{p}, a...)...)
	}
	switch {
	case m.Placement != PlaceCores:
		return fail("needs placement cores (have %s)", m.Placement)
	case o.WeightLayout != "":
		return fail("not with weight layout %s", o.WeightLayout)
	case o.PackPerCall:
		return fail("not with the packing ablation (weights are packed once, into node-placed memory)")
	case m.Quant != nil:
		return fail("needs fp32 weights (have %s)", m.WeightFormat)
	case m.Config.Experts > 0:
		return fail("needs a dense model (%s has %d experts)", m.Config.Name, m.Config.Experts)
	}
	if err := numa.Available(); err != nil {
		return fail("%v", err)
	}
	cpus := m.pool.CPUs()
	nm := &numaMem{policy: p, workerNode: make([]int, len(cpus)), ps: os.Getpagesize(), bufs: map[*byte]*numaBuf{}}
	for i, c := range cpus {
		if c < 0 {
			why := ""
			if pe := m.pool.PinErr(); pe != nil {
				why = ": " + pe.Error()
			}
			return fail("worker %d is not pinned to a CPU, so it has no node%s", i, why)
		}
		n, err := numa.CPUNode(c)
		if err != nil {
			return fail("%v", err)
		}
		nm.workerNode[i] = n
		if !slices.Contains(nm.nodes, n) {
			nm.nodes = append(nm.nodes, n)
		}
	}
	slices.Sort(nm.nodes)
	m.numa = nm
	m.Notes = append(m.Notes, fmt.Sprintf("NUMA %s: workers on nodes %v (worker → node %v)", p, nm.nodes, nm.workerNode))
	return nil
}

// alloc maps n floats for class, places them (interleave, or spans nil:
// interleaved over the nodes; else each page bound to the node of the
// span reading most of it, numa.PageOwners, a page no span covers going
// to the page before it) and touches every page, so that each is placed
// now and no timed operator pays its first-touch fault.
func (nm *numaMem) alloc(class string, n int, spans []numa.Span) ([]float32, error) {
	return nm.allocIn(class, -1, n, spans)
}

// allocIn is alloc of a buffer of tp thread group group (-1: none), which
// Model.NUMAPlacement reports per group.
func (nm *numaMem) allocIn(class string, group, n int, spans []numa.Span) ([]float32, error) {
	fail := func(err error) error {
		if group >= 0 {
			return fmt.Errorf("engine: NUMA policy %s: %s of TP group %d: %w", nm.policy, class, group, err)
		}
		return fmt.Errorf("engine: NUMA policy %s: %s: %w", nm.policy, class, err)
	}
	b, err := numa.Alloc(4 * max(n, 1))
	if err != nil {
		return nil, fail(err)
	}
	buf := &numaBuf{b: b, class: class, group: group}
	if (nm.policy == NUMALocal || nm.policy == NUMATP) && spans != nil {
		owners, err := numa.PageOwners(len(b), spans)
		if err == nil {
			last := nm.nodes[0]
			for i, o := range owners {
				if o < 0 {
					owners[i] = last
				}
				last = owners[i]
			}
			err = numa.BindPages(b, owners)
		}
		buf.owners = owners
		if err != nil {
			numa.Free(b)
			return nil, fail(err)
		}
	} else if err := numa.Interleave(b, nm.nodes); err != nil {
		numa.Free(b)
		return nil, fail(err)
	}
	for i := 0; i < len(b); i += nm.ps {
		b[i] = 0
	}
	nm.mu.Lock()
	nm.bufs[&b[0]] = buf
	nm.mu.Unlock()
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n), nil
}

// free unmaps buffers from alloc; ones already freed (by freeAll) are
// skipped.
func (nm *numaMem) free(fs ...[]float32) {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	for _, f := range fs {
		if cap(f) == 0 {
			continue
		}
		key := (*byte)(unsafe.Pointer(unsafe.SliceData(f)))
		if buf, ok := nm.bufs[key]; ok {
			numa.Free(buf.b)
			delete(nm.bufs, key)
		}
	}
}

// freeAll unmaps every buffer (Model.Close).
func (nm *numaMem) freeAll() {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	for k, buf := range nm.bufs {
		numa.Free(buf.b)
		delete(nm.bufs, k)
	}
}

// colSpans are the spans of an rows×n row-major float32 buffer whose
// columns are cut among the workers of g as runLinear cuts a linear's
// output (pool.Block over N at tile t, as for M ≤ N), each worker's columns
// of every row on its node: unit is the bytes per column (4 for an output,
// 4·K for a weight's panels, where column j is row j of W) and rowBytes
// the bytes from one row to the next.
func (nm *numaMem) colSpans(g *pool.Group, rows, n int, t pool.Tile, unit, rowBytes int) []numa.Span {
	var spans []numa.Span
	ws := g.Workers()
	for i, w := range ws {
		r := pool.Block(pool.Region{M1: 1, N1: n}, t, len(ws), i)
		if r.Empty() {
			continue
		}
		for row := range rows {
			spans = append(spans, numa.Span{Off: row*rowBytes + r.N0*unit, End: row*rowBytes + r.N1*unit, Node: nm.workerNode[w]})
		}
	}
	return spans
}

// rowSpans are the spans of a rows×width float32 buffer whose rows are cut
// among the workers of g as Batch.par cuts them (the caller, worker 0,
// alone below parMinElems or for one row).
func (nm *numaMem) rowSpans(g *pool.Group, rows, width int) []numa.Span {
	ws := g.Workers()
	if rows*width < parMinElems || len(ws) == 1 || rows == 1 {
		return []numa.Span{{Off: 0, End: 4 * rows * width, Node: nm.workerNode[ws[0]]}}
	}
	var spans []numa.Span
	for i, w := range ws {
		r0, r1 := i*rows/len(ws), (i+1)*rows/len(ws)
		if r0 < r1 {
			spans = append(spans, numa.Span{Off: 4 * r0 * width, End: 4 * r1 * width, Node: nm.workerNode[w]})
		}
	}
	return spans
}

// numaLinear packs data (n×k) into the cores backend's panels in memory
// placed by the policy (local: each worker's share of the panels on its
// node).
func (m *Model) numaLinear(op string, data []float32, n, k int) (*linear, error) {
	nr := max(m.Backend.TileN, 1)
	np := (n + nr - 1) / nr
	var spans []numa.Span
	if m.numa.policy == NUMALocal {
		// Panel p holds rows [p·nr, p·nr+nr) of W, k·nr floats: a
		// worker's rows [n0, n1) (cut at the tile, TileN = nr) are the
		// bytes [n0·4k, n1·4k) of the panels, np·nr rows in all.
		spans = m.numa.colSpans(m.all, 1, np*nr, m.Backend.Tile(), 4*k, 0)
	}
	pan, err := m.numa.alloc(op, np*k*nr, spans)
	if err != nil {
		return nil, err
	}
	packRows(pan, data, n, k, nr, 0, np)
	return &linear{op: op, n: n, k: k, npan: pan}, nil
}

// numaRunLinear computes y = x·Wᵀ (M rows) from l's node-placed panels on
// every worker, each a tile-aligned block as gemm.Weights.Run cuts it.
func (m *Model) numaRunLinear(ms *pool.Master, l *linear, y, x []float32, M int) error {
	N, K, nr := l.n, l.k, max(m.Backend.TileN, 1)
	stride := K * nr
	return ms.RunBlocks(m.all, pool.Region{M1: M, N1: N}, m.Backend.Tile(), func(worker, m0, m1, n0, n1 int) error {
		return gemm.PanelBlock(m.Backend, y[m0*N+n0:], N, x[m0*K:], K, m1-m0, K, l.npan[(n0/nr)*stride:], stride, n1-n0, false, m.scratches[worker])
	})
}

// numaBatch is a Batch's buffers from the Model's allocator.
type numaBatch struct {
	mem  *numaMem
	kv   [][]float32
	acts [][]float32
}

func (nb *numaBatch) free() {
	nb.mem.free(nb.kv...)
	nb.mem.free(nb.acts...)
	nb.kv, nb.acts = nil, nil
}

// numaBatchInit gives b its allocator record, freed with the Batch.
func (b *Batch) numaBatchInit() {
	if b.m.numa == nil {
		return
	}
	b.nm = &numaBatch{mem: b.m.numa}
	runtime.AddCleanup(b, func(nb *numaBatch) { nb.free() }, b.nm)
}

// numaAllocKV is allocKV from the Model's allocator: interleaved (see
// the comment at the top of this file).
func (b *Batch) numaAllocKV(sl *slot) error {
	layers := b.m.Config.Layers
	kc, vc := make([][]float32, layers), make([][]float32, layers)
	nk, nv := b.kv.floats()
	for l := range kc {
		var err error
		if kc[l], err = b.nm.mem.alloc(numaKV, nk, nil); err == nil {
			b.nm.kv = append(b.nm.kv, kc[l])
			vc[l], err = b.nm.mem.alloc(numaKV, nv, nil)
			b.nm.kv = append(b.nm.kv, vc[l])
		}
		if err != nil {
			return err
		}
	}
	sl.kc, sl.vc = kc, vc
	return nil
}

// numaGrow is grow from the Model's allocator: the buffers for T rows
// (and the logits of T rows), each placed by its writer under local (see
// the comment at the top of this file); the old ones are freed.
func (b *Batch) numaGrow(T int) error {
	m, c := b.m, b.m.Config
	nm, g, t := m.numa, m.all, m.Backend.Tile()
	out := func(n int) []numa.Span { return nm.colSpans(g, T, n, t, 4, 4*n) }
	rows := func(w int) []numa.Span { return nm.rowSpans(g, T, w) }
	type want struct {
		dst   *[]float32
		n     int
		spans []numa.Span
	}
	ws := []want{
		{&b.x, T * c.Dim, rows(c.Dim)}, {&b.xb, T * c.Dim, rows(c.Dim)},
		{&b.q, T * c.QDim(), out(c.QDim())}, {&b.att, T * c.QDim(), nil},
		{&b.kn, T * c.KVDim(), out(c.KVDim())}, {&b.vn, T * c.KVDim(), out(c.KVDim())},
		{&b.ob, T * c.Dim, out(c.Dim)},
		{&b.hb, T * c.Intermediate, out(c.Intermediate)}, {&b.hb2, T * c.Intermediate, out(c.Intermediate)},
		{&b.logits, T * c.Vocab, out(c.Vocab)},
	}
	got := make([][]float32, len(ws))
	for i, w := range ws {
		var err error
		if got[i], err = nm.alloc(numaAct, w.n, w.spans); err != nil {
			nm.free(got...)
			return err
		}
	}
	nm.free(b.nm.acts...)
	b.nm.acts = got
	for i, w := range ws {
		*w.dst = got[i]
	}
	b.rows = T
	return nil
}

// NUMAPlacement is where one class of a Model's tensors (its weight
// matrices of one operator over every layer, the KV caches or the
// activation buffers of its live Batches; under tp the KV caches and the
// activations of one thread group) was found, by sampling pages
// (numa.SamplePages: move_pages, which reports without moving or faulting
// anything in), against where policy interleave, local or tp meant them
// to be.
type NUMAPlacement struct {
	// Tensor is the class: an operator name (q_proj, ..., lm_head) for
	// weights, "kv_cache" or "activations".
	Tensor string `json:"tensor"`
	// TPGroup is, under tp, the thread group whose KV caches or
	// activations the row counts (one row per group and class; tp's
	// weights are one row per operator, every group's slices together);
	// -1 on every other row.
	TPGroup int `json:"tp_group"`
	// Node is the node every page of the row's buffers was bound to (tp's
	// per-group rows: the group's node); -1 where the pages were meant
	// for several nodes or interleaved.
	Node int `json:"node"`
	// Intended says where the pages were meant to go: "bound to its
	// worker's node" (each page to the node of the worker that reads
	// or writes most of it), "bound to its group's node" (tp's weight
	// slices), "bound to TP group 1's node 1" (tp's per-group rows), "interleaved over nodes 0,1" or both, joined by
	// "; ", where a class has buffers of each kind.
	Intended string `json:"intended"`
	// Buffers and Bytes are the class's buffers and their bytes.
	Buffers int   `json:"buffers"`
	Bytes   int64 `json:"bytes"`
	// Sampled is the pages sampled; OnIntended those found on their
	// intended node (bound) or on one of the interleave nodes; Fraction
	// their ratio.
	Sampled    int     `json:"sampled_pages"`
	OnIntended int     `json:"on_intended"`
	Fraction   float64 `json:"fraction_on_intended"`
	// PagesPerNode counts the sampled pages per node; a negative key is
	// a page move_pages could not place (−2 −ENOENT, −14 −EFAULT: not
	// resident).
	PagesPerNode map[int]int `json:"pages_per_node"`
}

// numaSampleWindow is how many consecutive pages one sample takes: pages
// interleaved over up to 8 nodes then show every node (evenly spaced single
// pages could all fall on one node of the rotation).
const numaSampleWindow = 8

// NUMAPlacement samples up to samples pages of every buffer of the Model's
// allocator (the Model's weights and the KV caches and activations of its
// Batches not yet collected; samples ≤ 0: 64) and returns, per tensor
// class in a fixed order (weights by operator, then kv_cache, then
// activations; under tp the KV caches and activations one row per thread
// group, in group order), how many were on the node meant for them. A
// buffer of at most samples pages is sampled whole, a larger one in
// windows of 8 consecutive pages spread evenly over it. Under os it
// returns nil (the OS places the memory: nothing was meant), and under tp
// where the groups' memory is on the Go heap (Model.Notes says why).
// Errors: a closed Model, and numa.SamplePages' (one line naming the
// policy).
func (m *Model) NUMAPlacement(samples int) ([]NUMAPlacement, error) {
	nm := m.numa
	if nm == nil && m.tp != nil {
		nm = m.tp.mem // tp: the groups' weight panels, KV caches and activations, each bound to its group's node
	}
	if nm == nil {
		return nil, nil
	}
	if m.closed {
		return nil, fmt.Errorf("engine: NUMA placement: model %s is closed", m.Config.Name)
	}
	if samples <= 0 {
		samples = 64
	}
	nodes := make([]string, len(nm.nodes))
	for i, n := range nm.nodes {
		nodes[i] = fmt.Sprint(n)
	}
	inter := "interleaved over nodes " + strings.Join(nodes, ",")
	if len(nodes) == 1 {
		inter = "interleaved over node " + nodes[0]
	}
	bound := "bound to its worker's node"
	if nm.policy == NUMATP {
		bound = "bound to its group's node" // tp's weight slices, every group's in one row
	}
	type key struct {
		class string
		group int
	}
	byKey := map[key]*NUMAPlacement{}
	kinds := map[key]map[string]bool{}
	nm.mu.Lock()
	defer nm.mu.Unlock()
	for _, buf := range nm.bufs {
		k := key{buf.class, buf.group}
		pl := byKey[k]
		if pl == nil {
			pl = &NUMAPlacement{Tensor: buf.class, TPGroup: buf.group, Node: -2, PagesPerNode: map[int]int{}}
			byKey[k], kinds[k] = pl, map[string]bool{}
		}
		pl.Buffers++
		pl.Bytes += int64(len(buf.b))
		// Node: the one node of every owner of every buffer of the row.
		one := -1
		if buf.owners != nil {
			one = buf.owners[0]
			for _, o := range buf.owners {
				if o != one {
					one = -1
					break
				}
			}
		}
		switch {
		case pl.Node == -2: // the row's first buffer
			pl.Node = one
		case pl.Node != one:
			pl.Node = -1
		}
		switch {
		case buf.owners == nil:
			kinds[k][inter] = true
		case buf.group >= 0 && one >= 0:
			kinds[k][fmt.Sprintf("bound to TP group %d's node %d", buf.group, one)] = true
		default:
			kinds[k][bound] = true
		}
		np := (len(buf.b) + nm.ps - 1) / nm.ps
		var starts []int
		win := numaSampleWindow
		if np <= samples {
			starts, win = []int{0}, np
		} else {
			k := max(samples/win, 2)
			for j := range k {
				starts = append(starts, j*(np-win)/(k-1))
			}
		}
		for _, s := range starts {
			pages, got, err := numa.SamplePages(buf.b[s*nm.ps:min((s+win)*nm.ps, len(buf.b))], win)
			if err != nil {
				return nil, fmt.Errorf("engine: NUMA policy %s: placement of %s: %w", nm.policy, buf.class, err)
			}
			for i, node := range got {
				pl.Sampled++
				pl.PagesPerNode[node]++
				ok := slices.Contains(nm.nodes, node)
				if buf.owners != nil {
					ok = node == buf.owners[s+pages[i]]
				}
				if ok {
					pl.OnIntended++
				}
			}
		}
	}
	keys := slices.Collect(maps.Keys(byKey))
	rank := map[string]int{}
	for i, c := range append(opOrder(), numaKV, numaAct) {
		rank[c] = i + 1
	}
	for _, k := range keys {
		if rank[k.class] == 0 {
			return nil, fmt.Errorf("engine: NUMA placement: tensor class %q outside the operator list", k.class)
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(rank[a.class], rank[b.class]); c != 0 {
			return c
		}
		return cmp.Compare(a.group, b.group)
	})
	out := make([]NUMAPlacement, 0, len(keys))
	for _, k := range keys {
		pl := byKey[k]
		pl.Intended = strings.Join(slices.Sorted(maps.Keys(kinds[k])), "; ")
		if pl.Sampled > 0 {
			pl.Fraction = float64(pl.OnIntended) / float64(pl.Sampled)
		}
		out = append(out, *pl)
	}
	return out, nil
}

// opOrder is the weight classes in forward order.
func opOrder() []string {
	return []string{OpQProj, OpKProj, OpVProj, OpOProj, OpGateProj, OpUpProj, OpDownProj, OpLMHead}
}
