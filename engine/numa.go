package engine

import (
	"fmt"
	"strings"
)

// NUMAPolicy is where a Model's threads, weights and activations live on a
// machine with several NUMA nodes (ArcLight §2.3–2.4, §3; Figs. 7–13).
//
//   - os: threads pinned as the pool pins them, memory left to the OS's
//     first-touch policy (llama.cpp's --numa distribute: ArcLight Fig. 7).
//   - interleave: every weight and activation buffer interleaved page by
//     page over the nodes of the Model's CPUs (MPOL_INTERLEAVE, as
//     `numactl --interleave` does).
//   - local: each worker's share of every weight matrix (the output rows it
//     computes) and the activations it writes bound to the worker's own
//     node (mbind MPOL_BIND), verified by sampling pages; on one node this
//     is ArcLight Fig. 10's node-local allocation.
//   - tp: cross-NUMA tensor parallelism (ArcLight §3.2–3.4): the model
//     partitioned over TPDegree thread groups, one per node (W_q, W_k, W_v,
//     W_gate, W_up by output rows; W_o, W_down by input columns; attention
//     by heads, each group's KV cache on its node), Scatter/Gather between
//     the groups (§3.3) and the synchronization Sync picks (§3.4, Fig. 9).
type NUMAPolicy string

// The NUMA policies (ArcLight §2.3–2.4, §3).
const (
	NUMAOS         NUMAPolicy = "os"
	NUMAInterleave NUMAPolicy = "interleave"
	NUMALocal      NUMAPolicy = "local"
	NUMATP         NUMAPolicy = "tp"
)

// NUMAPolicies lists the policies in the order the help text gives them.
func NUMAPolicies() []NUMAPolicy {
	return []NUMAPolicy{NUMAOS, NUMAInterleave, NUMALocal, NUMATP}
}

// ParseNUMAPolicy reads a policy name; "" is os. An unknown name is an
// error naming it and the allowed ones.
func ParseNUMAPolicy(s string) (NUMAPolicy, error) {
	if s == "" {
		return NUMAOS, nil
	}
	var names []string
	for _, p := range NUMAPolicies() {
		if string(p) == s {
			return p, nil
		}
		names = append(names, string(p))
	}
	return "", fmt.Errorf("engine: NUMA policy %q: want one of %s", s, strings.Join(names, ", "))
}

// SyncMode is how tensor-parallel thread groups synchronize (ArcLight
// §3.4, Fig. 9).
//
//   - a (Sync A): a global barrier after every operator: every group
//     finishes an operator before any group starts the next.
//   - b (Sync B): barriers within each group between its operators; global
//     barriers only where the groups exchange data (the Gather after W_o
//     and after W_down, and the ends of the forward call).
type SyncMode string

// The synchronization modes of ArcLight §3.4.
const (
	SyncA SyncMode = "a"
	SyncB SyncMode = "b"
)

// ParseSyncMode reads a mode name ("" is b, the paper's asynchronous
// subgraph execution). An unknown name is an error naming it.
func ParseSyncMode(s string) (SyncMode, error) {
	switch SyncMode(strings.ToLower(s)) {
	case "":
		return SyncB, nil
	case SyncA:
		return SyncA, nil
	case SyncB:
		return SyncB, nil
	}
	return "", fmt.Errorf("engine: sync mode %q: want a (global barrier per operator) or b (group-local barriers, global only at the Gathers)", s)
}

// checkTPDegree checks a tensor-parallel degree against a model's heads:
// it must divide the query heads and the KV heads (ArcLight §3.2,
// Sandwich §5.3's operator limits). The error names the degree and the
// degrees that divide both.
func checkTPDegree(c Config, d int) error {
	if d < 1 {
		return fmt.Errorf("engine: TP degree %d: must be ≥ 1", d)
	}
	if c.Heads%d == 0 && c.KVHeads%d == 0 {
		return nil
	}
	var ok []string
	for k := 1; k <= c.KVHeads; k++ {
		if c.Heads%k == 0 && c.KVHeads%k == 0 {
			ok = append(ok, fmt.Sprint(k))
		}
	}
	return fmt.Errorf("engine: TP degree %d: must divide the %d query heads and %d KV heads (allowed: %s)", d, c.Heads, c.KVHeads, strings.Join(ok, ", "))
}

// checkNUMA checks the NUMA options against the model before anything is
// allocated (numaInit, and tp's setup, check the rest once the workers
// run).
func (o *Options) checkNUMA(c Config) error {
	p, err := ParseNUMAPolicy(string(o.NUMA))
	if err != nil {
		return err
	}
	if _, err := ParseSyncMode(string(o.Sync)); err != nil {
		return err
	}
	if o.TPDegree != 0 && p != NUMATP {
		return fmt.Errorf("engine: TP degree %d: only with NUMA policy tp", o.TPDegree)
	}
	if o.Sync != "" && p != NUMATP {
		return fmt.Errorf("engine: sync mode %s: only with NUMA policy tp", o.Sync)
	}
	if p == NUMATP && o.TPDegree != 0 {
		if err := checkTPDegree(c, o.TPDegree); err != nil {
			return err
		}
	}
	return nil
}
