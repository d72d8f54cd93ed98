package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const kunpengSnapshot = "../../internal/topology/testdata/linux-arm64-kunpeng-920-4n"

func TestTopoSnapshotRemove(t *testing.T) {
	code, out, errs := run(t, "topo", "--profile", kunpengSnapshot, "--remove", "idle-per-node")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"188 PUs active, 4 idle", "transforms: remove(1,3)", "| 2     | numa/l3", "idle CPUs (4): 47,95,143,191",
		"taskset -c 0-46,48-94,96-142,144-190 bench run"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestTopoConfigsJSON(t *testing.T) {
	code, out, errs := run(t, "topo", "--shape", "package=4,numa=2,core=24", "--configs", "--model", "llama-3.2-3b", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Active  []int `json:"active"`
		Grouped int   `json:"grouped_trees"`
		Removed int   `json:"removed_trees"`
		Limited int   `json:"limited"`
		Heads   int   `json:"heads"`
		Configs []struct {
			Tree      string `json:"tree"`
			Processes int    `json:"processes"`
			TP        int    `json:"tp"`
			PUsMin    int    `json:"pus_min"`
			Nodes     [][]int
		} `json:"configs"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.Active) != 192 || r.Grouped != 24 || r.Removed == 0 || r.Limited == 0 || r.Heads != 24 || len(r.Configs) == 0 {
		t.Fatalf("active %d grouped %d removed %d limited %d heads %d configs %d", len(r.Active), r.Grouped, r.Removed, r.Limited, r.Heads, len(r.Configs))
	}
	fig6 := false
	for _, c := range r.Configs {
		if 24%c.TP != 0 || 8%c.TP != 0 {
			t.Errorf("config %+v: TP %d does not divide 24 and 8 heads", c, c.TP)
		}
		fig6 = fig6 || (c.Tree == "group(4,1,3) remove(1,4)" && c.Processes == 8 && c.PUsMin == 18)
	}
	if !fig6 {
		t.Error("the Fig. 6 configuration (8 processes of 18 PUs) is missing")
	}
}

func TestTopoBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shape", "package=2,core=4", "--remove", "shuffle(1)"}, `unknown transform "shuffle(1)" (allowed: group(n,t,d), remove(n,d), idle-per-l2`},
		{[]string{"--shape", "package=2,core=4", "--remove", "remove(4,core)"}, "remove(4,2): each node at depth 1 (package) has 4 children; n must be 1..3"},
		{[]string{"--shape", "package=2,socket=4"}, `shape item "socket=4": want kind=count with kind one of package, numa, l3, l2, core, thread`},
		{[]string{"--shape", "core=2", "--profile", "x"}, "give one machine, not both"},
		{[]string{"--profile", "kunpeng-920"}, "a published machine file has no topology tree"},
		{[]string{"--profile", filepath.Join(dir, "none.json")}, "no such file or directory"},
		{[]string{"--profile", dir}, "not a sysfs snapshot"},
		{[]string{"--shape", "core=2", "--model", "qwen3-8b"}, "needs --configs"},
		{[]string{"--shape", "core=2", "--configs", "--model", "nope"}, `model "nope": not a shipped config`},
		{[]string{"--shape", "core=2", "--max-trees", "0"}, "--max-trees 0: must be ≥ 1"},
		{[]string{"--shape", "package=2,core=4", "--cpus", "0-3,9-10"}, "--cpus 0-3,9-10: topotree: CPUs 9-10 are outside the allowed set 0-7"},
		{[]string{"--cpus", "0-4095"}, "are outside the allowed set"},
		{[]string{"--shape", "core=2", "--cpus", "x"}, `--cpus: topology: parse cpulist "x"`},
	} {
		code, out, errs := run(t, append([]string{"topo"}, tc.args...)...)
		if code != 1 || out != "" || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("topo %v: exit %d, stdout %q, stderr %q; want one line with %q", tc.args, code, out, errs, tc.want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "p.json"), []byte(`{"schema":"bench.profile/v1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "topo", "--profile", filepath.Join(dir, "p.json")); code != 1 || strings.Count(errs, "\n") != 1 {
		t.Errorf("bad profile: exit %d, %q", code, errs)
	}
}

func TestTopoProfileJSON(t *testing.T) {
	code, out, errs := run(t, "topo", "--profile", "../../results/testdata/profile-amd-epyc-2core.json", "--configs")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "TopoTree of profile") || !strings.Contains(out, "configurations:") {
		t.Errorf("output:\n%s", out)
	}
}

func TestTopoCPUs(t *testing.T) {
	code, out, errs := run(t, "topo", "--shape", "package=4,numa=2,core=24", "--cpus", "0-47", "--remove", "sc-rm")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"CPUs 0-47: 36 PUs active, 12 idle", "| 0     | machine/package", "idle CPUs (12): 3,7,11,15,19,23,27,31,35,39,43,47"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
