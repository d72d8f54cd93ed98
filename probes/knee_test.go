package probes

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// synthCurve is a read curve at threads threads: L1 plateau to 32 KiB,
// L2 to 1 MiB, a hidden L3 at l3 GB/s up to l3Size, then DRAM at dram,
// with log-spaced working sets (2 per octave) up to 1 GiB.
func synthCurve(threads int, l3, dram float64, l3Size int64) []results.Bandwidth {
	var out []results.Bandwidth
	for _, ws := range WorkingSets(16<<10, 1<<30, 2) {
		g := dram
		switch {
		case ws <= 32<<10:
			g = 400
		case ws <= 1<<20:
			g = 200
		case ws <= l3Size:
			g = l3
		case ws <= 2*l3Size:
			g = (l3 + dram) / 3 // partly served from the L3: below the midpoint
		}
		out = append(out, results.Bandwidth{Kernel: "read", Threads: threads, WorkingSetBytes: ws, GBps: results.Stat{Median: g}})
	}
	return out
}

func TestDetectKneeSynthetic(t *testing.T) {
	pts := synthCurve(1, 100, 30, 16<<20)
	k, ok := DetectKnee(pts, 1, 1<<20)
	if !ok {
		t.Fatal("no knee found on a curve with a 16 MiB level")
	}
	if k.SizeBytes > 16<<20 || k.SizeBytes < 8<<20 {
		t.Errorf("knee %d bytes, want within (8 MiB, 16 MiB]", k.SizeBytes)
	}
	if k.PlateauGBps != 100 || k.DRAMGBps != 30 || k.ThresholdGBps != 65 {
		t.Errorf("plateau %v DRAM %v threshold %v, want 100, 30, 65", k.PlateauGBps, k.DRAMGBps, k.ThresholdGBps)
	}
	// No level past L2: the curve falls from L2 straight to DRAM.
	flat := synthCurve(1, 30, 30, 16<<20)
	if k, ok := DetectKnee(flat, 1, 1<<20); ok {
		t.Errorf("knee %+v found on a curve with no level past L2", k)
	}
	// A single dip below the threshold inside the plateau is noise.
	noisy := synthCurve(1, 100, 30, 64<<20)
	for i := range noisy {
		if noisy[i].WorkingSetBytes > 4<<20 && noisy[i].WorkingSetBytes < 8<<20 {
			noisy[i].GBps.Median = 50
			break
		}
	}
	if k, ok := DetectKnee(noisy, 1, 1<<20); !ok || k.SizeBytes < 32<<20 {
		t.Errorf("one noisy point cut the plateau: %+v, %v", k, ok)
	}
	// Other kernels and thread counts are ignored; too few points: none.
	if _, ok := DetectKnee(pts, 2, 1<<20); ok {
		t.Error("knee found at a thread count with no points")
	}
	if _, ok := DetectKnee(pts[:3], 1, 0); ok {
		t.Error("knee found on three points")
	}
}

// The recorded curves of this project's 2-vCPU Zen 5 VM (CPUID and sysfs
// report no L3): a level that reads 3× DRAM up to about 16 MiB at one
// thread.
func TestDetectKneeRecordedVM(t *testing.T) {
	files, err := filepath.Glob("testdata/knee-vm-*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded curves: %v", err)
	}
	for _, f := range files {
		p, err := results.ReadProfile(f)
		if err != nil {
			t.Fatal(err)
		}
		k, ok := DetectKnee(p.Memory.WorkingSet, 1, 1<<20)
		if !ok {
			t.Errorf("%s: no knee at 1 thread", f)
			continue
		}
		if k.SizeBytes < 8<<20 || k.SizeBytes > 48<<20 {
			t.Errorf("%s: 1-thread knee %s, want 8–48 MiB", f, sizeText(k.SizeBytes))
		}
		q, note := WithMeasuredLLC(p)
		if q == p || !strings.Contains(note, "knee") {
			t.Fatalf("%s: no L3 added: %q", f, note)
		}
		var l3 *results.Cache
		for i, c := range q.Topology.Caches {
			if c.Level == 3 {
				l3 = &q.Topology.Caches[i]
			}
		}
		if l3 == nil || l3.Source != KneeSource || l3.SizeBytes > k.SizeBytes {
			t.Fatalf("%s: L3 entry %+v, want source %q and at most the 1-thread knee %d", f, l3, KneeSource, k.SizeBytes)
		}
		if len(q.Topology.CacheKnees) == 0 || q.Topology.KneeRule == "" {
			t.Errorf("%s: knees or rule not recorded", f)
		}
		var levels []string
		for _, l := range q.Memory.Levels {
			levels = append(levels, l.Level)
			if l.Level == "L3" && !(l.GBps.Median > 1.5*k.DRAMGBps) {
				t.Errorf("%s: L3 roof %.1f GB/s at %d threads, not above DRAM's", f, l.GBps.Median, l.Threads)
			}
		}
		if got := strings.Join(levels, " "); got != "L1 L2 L3 DRAM L1 L2 L3 DRAM" {
			t.Errorf("%s: levels %s", f, got)
		}
		// The input is untouched, and a profile with an L3 is returned as is.
		for _, c := range p.Topology.Caches {
			if c.Level == 3 {
				t.Fatalf("%s: WithMeasuredLLC modified its input", f)
			}
		}
		if r, note := WithMeasuredLLC(q); r != q || note != "" {
			t.Errorf("%s: a profile with an L3 changed again: %q", f, note)
		}
		t.Logf("%s: %s", f, note)
	}
}

func TestWithMeasuredLLCNone(t *testing.T) {
	p := &results.Profile{Topology: &results.Topology{Cores: 1, Caches: []results.Cache{{Level: 2, Type: "Unified", SizeBytes: 1 << 20, Instances: 1}}},
		Memory: &results.Memory{WorkingSet: synthCurve(1, 30, 30, 16<<20)}}
	q, note := WithMeasuredLLC(p)
	if q != p || !strings.Contains(note, "no knee") {
		t.Errorf("flat curve: got a new profile or note %q", note)
	}
}
