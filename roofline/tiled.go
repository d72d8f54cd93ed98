package roofline

import "math"

// The work a tiled prefill attention kernel does, as opposed to the
// catalog's causal count (issue #16 part 1: predictions of what runs).
// The catalog counts qk and pv at 2·d FLOPs per causal (query head, key)
// pair and the softmax at one element per pair, with the scores
// materialized (SMEPilot §3.2's operator view). A tiled kernel (the
// engine's, engine/attention.go; SMEPilot §4.2, Fig. 6) differs in four
// ways, each a term of TiledWork:
//
//   - its products run on whole tiles: QKᵀ of a job's query rows against
//     a KV tile is computed over whole MR-row slivers and NR-key panels
//     (from the first sliver that sees each panel on the causal
//     diagonal), and P·V over every row that sees the tile times the
//     tile's whole length (the masked probabilities are zeros), so a
//     short prompt computes up to 1.3–2× the causal count;
//   - its softmax runs per (query row, tile): two vector passes (max, then
//     e^(s−m) with the sum) over the row's visible keys widened to whole
//     vectors, so its cost per element is the probe's softmax at rows of
//     that width (Nonlinear.RateFor), not at its longest rows, and its
//     scores never leave the core's caches (the tile's M×T scores stay in
//     L2: no memory term);
//   - the rescale of each row's accumulator before each tile and the final
//     division (AttentionStages.RescaleElems);
//   - each job scales and packs its queries and writes its output: about
//     QueryPassBytes bytes per query element at the L2 roof.
//
// Measured on the 2-core Zen 5 VM (one KV head of qwen3-0.6b, group 2,
// head dim 128, tile 256, 48 rows a job; one worker; per layer-head):
// context 128 took 81 µs against a causal model of about 35 µs (QKᵀ 20,
// P·V 26, softmax 17, setup and output 15.5); context 2048 11.5 ms
// (QKᵀ 4.2, P·V 5.1, softmax 1.7, setup and output 0.5).

// QueryPassBytes is the bytes a tiled attention job moves per query
// element (one head dim of one query row and head) outside its tiles: the
// query row read and copied (8), scaled in place (8), packed (8), the
// accumulator cleared (4), and the output copied (8) and divided in
// place (8).
const QueryPassBytes = 44

// AttnShape is an attention's shape on its catalog operators (qk, softmax,
// pv): B sequences of T new tokens at context C (positions C−T..C−1 are
// the new rows), H query heads over KV heads of head dim D.
type AttnShape struct {
	B, T, C, H, KVHeads, D int
}

// TiledWork is the work of one layer's tiled prefill attention.
type TiledWork struct {
	// QKFLOPs and PVFLOPs are the products' FLOPs as computed (whole
	// slivers and panels, whole tiles), 2 per multiply-add.
	QKFLOPs, PVFLOPs float64
	// RowTiles are the (query row and head, tile) pairs: one softmax
	// row each; ScoreElems the elements their passes run over (visible
	// keys widened to whole vectors).
	RowTiles, ScoreElems float64
	// RescaleElems are the accumulator elements rescaled (each row's
	// padded head dims once per tile it sees, and once more for the
	// final division).
	RescaleElems float64
	// QueryElems are B·H·T·D: the query elements each job copies, scales,
	// packs and writes back (QueryPassBytes each).
	QueryElems float64
}

// Tiled reports whether s carries a kernel's tiling (the panel width),
// so TiledWork applies.
func (s AttentionSchedule) Tiled() bool { return s.PanelN > 0 && s.Tile > 0 && s.Rows > 0 }

// Vector reports whether a request of shape a runs the kernel's vector
// path (a job's rows × group below s.VecRows: decode), where TiledWork
// does not apply.
func (s AttentionSchedule) Vector(a AttnShape) bool {
	g := a.H / max(a.KVHeads, 1)
	return min(a.T, s.Rows)*g < s.VecRows
}

// TiledWork is the work of one layer's attention of shape a under the
// tiling of s (s.Tiled()): jobs of s.Rows query rows, the latest first,
// of one sequence and KV head each; KV tiles of s.Tile positions; products
// on slivers of s.TileM rows and panels of s.PanelN keys (head dims padded
// to a multiple of s.PanelN in the accumulator); softmax runs widened to
// a multiple of s.Pad elements and at most the tile. Zero fields of s
// count as 1. A sliding window (s.Window) is not modeled here: every tile
// up to a row's position counts, as the catalog's causal pairs do.
func (s AttentionSchedule) TiledWork(a AttnShape) TiledWork {
	var w TiledWork
	mr, nr, pad := max(s.TileM, 1), max(s.PanelN, 1), max(s.Pad, 1)
	tile, rows := max(s.Tile, 1), max(s.Rows, 1)
	g, d := a.H/max(a.KVHeads, 1), a.D
	hdPad := (d + nr - 1) / nr * nr
	pos0 := a.C - a.T
	up := func(x, m int) int { return (x + m - 1) / m * m }
	var qk, pv, rowTiles, elems, resc float64
	for r1 := a.T; r1 > 0; r1 -= rows {
		r0 := max(r1-rows, 0)
		n := r1 - r0
		M := n * g
		ctx := pos0 + r1
		for j0 := 0; j0 < ctx; j0 += tile {
			j1 := min(j0+tile, ctx)
			tA := max(0, j0-pos0-r0)
			if tA >= n {
				continue
			}
			iA, iB := tA*g, n*g
			iS, iE := iA/mr*mr, min(M, up(iB, mr))
			nt := j1 - j0
			ntPad := up(nt, nr)
			// Row iS sees the whole tile unless the causal diagonal
			// crosses it.
			if ragged := min(j1, pos0+r0+iS/g+1) < j1; !ragged || iE-iS <= mr {
				qk += float64((iE - iS) * ntPad)
			} else {
				for p0 := 0; p0 < ntPad; p0 += nr {
					i0 := max(iS, (j0+p0-pos0-r0)*g) / mr * mr
					if i0 >= iE {
						break
					}
					qk += float64((iE - i0) * nr)
				}
			}
			pv += float64((iB - iA) * nt)
			// Softmax runs and rescales, per query row (each of the g
			// heads of a position sees the same keys).
			for t := tA; t < n; t++ {
				hi := min(j1, pos0+r0+t+1) - j0
				elems += float64(g * min(up(hi, pad), tile))
			}
			rowTiles += float64(iB - iA)
			resc += float64(iB - iA)
		}
		resc += float64(M) // the final division
	}
	k := float64(a.B) * float64(a.KVHeads)
	w.QKFLOPs = 2 * float64(d) * qk * k
	w.PVFLOPs = 2 * float64(hdPad) * pv * k
	w.RowTiles = rowTiles * k
	w.ScoreElems = elems * k
	w.RescaleElems = resc * float64(hdPad) * k
	w.QueryElems = float64(a.B) * float64(a.H) * float64(a.T) * float64(d)
	return w
}

// tiledAttention reports whether attention operator o runs the tiling of
// m.AttnPlan (a prefill-sized job, not the vector path), and its work.
func (m *Machine) tiledAttention(o Operator) (TiledWork, bool) {
	if m.AttnPlan == nil || o.Attn == nil || !m.AttnPlan.Tiled() || m.AttnPlan.Vector(*o.Attn) {
		return TiledWork{}, false
	}
	if o.Name != OpQK && o.Name != OpSoftmax && o.Name != OpPV {
		return TiledWork{}, false
	}
	return m.AttnPlan.TiledWork(*o.Attn), true
}

// tiledVector is the vector stage of a tiled attention of work w on n
// threads (share of the cores' workers), in seconds: the softmax runs at
// the probe's softmax rate at their mean width (softmax), the rescale at
// half the cores' prec ceiling (a multiply where an FMA counts two
// FLOPs), the query passes at the L2 roof (setup); false without a
// softmax rate.
func (m *Machine) tiledVector(w TiledWork, prec string, cores Target, n int, share float64) (softmax, rescale, setup float64, ok bool) {
	if m.Nonlinear == nil || w.RowTiles <= 0 {
		return 0, 0, 0, false
	}
	g, _ := m.Nonlinear.RateFor(OpSoftmax, int(math.Round(w.ScoreElems/w.RowTiles)))
	if !(g > 0) {
		return 0, 0, 0, false
	}
	softmax = w.ScoreElems / (g * share * 1e9)
	if pi := cores.Ceiling(prec); pi > 0 {
		rescale = w.RescaleElems / (pi / 2 * share * 1e9)
	}
	for _, r := range m.roofsAt(n) {
		if r.Level == "L2" && r.GBps > 0 {
			setup = w.QueryElems * QueryPassBytes / (r.GBps * 1e9)
		}
	}
	return softmax, rescale, setup, true
}
