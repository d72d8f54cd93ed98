package probes

import (
	"context"
	"fmt"
	"slices"

	"github.com/cpubench/bench/internal/numa"
	"github.com/cpubench/bench/results"
)

// numaSection measures, for every (CPU node i, memory node j), the read
// bandwidth of node i's cores over a buffer bound to node j with mbind, and
// the pointer-chase latency from node i's first core; placement is verified
// with move_pages/get_mempolicy (ArcLight §3.1, Table 1).
func (r *runner) numaSection(ctx context.Context) (*results.NUMA, error) {
	n := &results.NUMA{WorkingSetBytes: r.plan.numaWS}
	for _, node := range r.topo.Nodes {
		n.Nodes = append(n.Nodes, node.ID)
	}
	if err := numa.Available(); err != nil {
		n.Unavailable = "unavailable: " + err.Error()
		for range r.plan.numaSteps {
			r.step("numa (unavailable)")
		}
		return n, nil
	}
	if len(n.Nodes) == 1 {
		n.Note = "single NUMA node: the matrix is 1 x 1"
	}
	for _, cpuNode := range r.topo.Nodes {
		var ws []*worker
		for _, w := range r.pool.workers[:r.plan.cores] {
			if slices.Contains(cpuNode.CPUs, w.cpu) {
				ws = append(ws, w)
			}
		}
		for _, memNode := range r.topo.Nodes {
			if len(ws) == 0 {
				// A memory-only node (no CPUs) is a column, never a row.
				continue
			}
			pair := results.NUMAPair{CPUNode: cpuNode.ID, MemNode: memNode.ID, CPUs: cpusOf(ws)}
			bw, err := r.measureOn(ctx, ws, kRead, r.plan.numaWS, memNode.ID, r.cfg.RepDuration)
			if err != nil {
				return nil, fmt.Errorf("numa cpu node %d, memory node %d: %w", cpuNode.ID, memNode.ID, err)
			}
			pair.ReadGBps = bw.GBps
			on, total, err := pagesOn(ws, memNode.ID)
			if err != nil {
				return nil, fmt.Errorf("numa cpu node %d, memory node %d: verify placement: %w", cpuNode.ID, memNode.ID, err)
			}
			lat, err := r.measureLatency(ctx, ws[0], r.plan.numaLatWS, memNode.ID)
			if err != nil {
				return nil, fmt.Errorf("numa cpu node %d, memory node %d: %w", cpuNode.ID, memNode.ID, err)
			}
			pair.LatencyNS = lat.NS
			lon, ltotal, err := pagesOn(ws[:1], memNode.ID)
			if err != nil {
				return nil, fmt.Errorf("numa cpu node %d, memory node %d: verify placement: %w", cpuNode.ID, memNode.ID, err)
			}
			on, total = on+lon, total+ltotal
			if total > 0 {
				pair.PagesOnNode = float64(on) / float64(total)
			}
			pair.Verified = total > 0 && on == total
			n.Pairs = append(n.Pairs, pair)
			r.step(fmt.Sprintf("numa cpu%d->mem%d", cpuNode.ID, memNode.ID))
		}
	}
	// Later sections allocate with first touch again.
	for _, w := range r.pool.workers {
		if w.node >= 0 {
			w.free()
		}
	}
	return n, nil
}

// pagesOn samples the pages of each worker's buffer and counts those on node.
func pagesOn(ws []*worker, node int) (on, total int, err error) {
	for _, w := range ws {
		if w.arena == nil {
			continue
		}
		m, err := numa.PageNodes(w.arena, 64)
		if err != nil {
			return 0, 0, err
		}
		for nd, c := range m {
			total += c
			if nd == node {
				on += c
			}
		}
	}
	return on, total, nil
}
