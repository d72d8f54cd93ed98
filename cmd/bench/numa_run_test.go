package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/affinity"
	"github.com/cpubench/bench/internal/numa"
)

// TestRunNUMATP: `bench run --numa tp --tp 2 --sync a|b` runs end to end
// and states the policy, degree, sync mode and groups' CPUs in its table
// output and its JSON, with the Gathers as operator rows.
func TestRunNUMATP(t *testing.T) {
	if cpus, err := affinity.Allowed(); err != nil || len(cpus) < 2 {
		t.Skip("needs 2 CPUs")
	}
	for _, sync := range []string{"a", "b"} {
		path := filepath.Join(t.TempDir(), "run.json")
		code, out, errs := run(t, "run", "--weights", stories, "--layers", "2", "--prompt-tokens", "6", "--gen-tokens", "2", "--batch", "2",
			"--threads", "2", "--numa", "tp", "--tp", "2", "--sync", sync, "--json", path)
		if code != 0 {
			t.Fatalf("sync %s: exit %d: %s", sync, code, errs)
		}
		for _, want := range []string{"NUMA policy tp: degree 2, sync " + sync + " (", "; group 0: CPUs ", "; group 1: CPUs ",
			"heads 0–3, KV heads 0–1", "| decode  | attn_gather", "| prefill | ffn_gather"} {
			if !strings.Contains(out, want) {
				t.Errorf("sync %s: output lacks %q:\n%s", sync, want, out)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var r runResult
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		n := r.NUMA
		if n == nil || n.Policy != "tp" || n.TPDegree != 2 || n.Sync != sync || len(n.Groups) != 2 ||
			len(n.Groups[0].CPUs) != 1 || len(n.Groups[1].CPUs) != 1 || n.Groups[0].CPUs[0] == n.Groups[1].CPUs[0] ||
			n.Groups[1].Heads != [2]int{4, 8} || n.Groups[1].KVHeads != [2]int{2, 4} {
			t.Errorf("sync %s: numa %+v", sync, n)
		}
		if numa.Available() != nil {
			continue // tp's memory on the Go heap: no placement to report
		}
		// Each group's KV caches and activations on rows of their own,
		// every sampled page on the group's node.
		for _, want := range []string{"NUMA policy tp: sampled pages per tensor class", "| q_proj ", "| kv_cache, group 0 ",
			"| kv_cache, group 1 ", "| activations, group 0 ", "| activations, group 1 ", "bound to TP group 1's node "} {
			if !strings.Contains(out, want) {
				t.Errorf("sync %s: output lacks %q:\n%s", sync, want, out)
			}
		}
		if len(n.Placement) != 7+2*2 {
			t.Fatalf("sync %s: %d placement rows, want 11 (7 weight classes, then kv_cache and activations per group)", sync, len(n.Placement))
		}
		for i, c := range n.Placement {
			if c.Fraction != 1 || c.Sampled == 0 {
				t.Errorf("sync %s: %s (group %d): %d of %d pages where intended", sync, c.Tensor, c.TPGroup, c.OnIntended, c.Sampled)
			}
			if i >= 7 && (c.TPGroup != (i-7)%2 || c.Node != n.Groups[c.TPGroup].Node) {
				t.Errorf("sync %s: row %d: %s of group %d bound to node %d; want group %d, its node %d", sync, i, c.Tensor, c.TPGroup, c.Node, (i-7)%2, n.Groups[(i-7)%2].Node)
			}
		}
	}
}

// TestRunNUMATPErrors: an impossible degree is one error line naming it.
func TestRunNUMATPErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--numa", "tp", "--tp", "3"}, "bench run: engine: TP degree 3: must divide the 8 query heads and 4 KV heads (allowed: 1, 2, 4)\n"},
		{[]string{"--numa", "tp", "--tp", "2", "--threads", "1"}, "bench run: engine: TP degree 2: must be between 1 and the 1 threads\n"},
		{[]string{"--numa", "tp", "--weight-dtype", "q8_0"}, "bench run: engine: NUMA policy tp: unsupported with weight format q8_0 (fp32 only)\n"},
	} {
		args := append([]string{"run", "--weights", stories, "--layers", "1", "--prompt-tokens", "2", "--gen-tokens", "1"}, c.args...)
		code, _, errs := run(t, args...)
		if code == 0 || errs != c.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}

// TestRunNUMA: --numa interleave and local run, print the page placement
// table and put it in the JSON, every sampled page where it was meant to go
// (this machine's nodes); the greedy tokens are those of os.
func TestRunNUMA(t *testing.T) {
	if err := numa.Available(); err != nil {
		t.Skipf("no NUMA memory policy here: %v", err)
	}
	args := func(p string, more ...string) []string {
		return append([]string{"run", "--weights", stories, "--layers", "2", "--prompt-tokens", "6", "--gen-tokens", "2",
			"--batch", "2", "--threads", "1", "--profile", "none", "--numa", p}, more...)
	}
	for _, p := range []string{"interleave", "local"} {
		code, out, errs := run(t, args(p)...)
		if code != 0 {
			t.Fatalf("--numa %s: exit %d: %s", p, code, errs)
		}
		for _, want := range []string{"NUMA policy " + p + ": sampled pages per tensor class", "| q_proj ", "| kv_cache ", "| activations ", "(100%)"} {
			if !strings.Contains(out, want) {
				t.Errorf("--numa %s: output lacks %q:\n%s", p, want, out)
			}
		}
		code, out, errs = run(t, args(p, "--json")...)
		if code != 0 {
			t.Fatalf("--numa %s --json: exit %d: %s", p, code, errs)
		}
		var r runResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.NUMA == nil || r.NUMA.Policy != p || len(r.NUMA.Placement) != 10 {
			t.Fatalf("--numa %s --json: numa %+v; want policy %s and 10 placement rows (8 weight classes, kv_cache, activations)", p, r.NUMA, p)
		}
		for _, c := range r.NUMA.Placement {
			if c.Fraction != 1 || c.Sampled == 0 {
				t.Errorf("--numa %s: %s: %d of %d pages where intended", p, c.Tensor, c.OnIntended, c.Sampled)
			}
		}
	}
	code, _, errs := run(t, args("local", "--placement", "mixed", "--threads", "2")...)
	if code == 0 || !strings.Contains(errs, "NUMA policy local: needs placement cores (have mixed)") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("--numa local --placement mixed: exit %d, stderr %q; want one error line", code, errs)
	}
}
