package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// TestDispatchMarkdown: the dispatch section renders its fork-join table,
// the cold vector call and the core-to-core reads with their ratio, and
// the core-to-core table without a cold vector call too.
func TestDispatchMarkdown(t *testing.T) {
	st := func(v float64) results.Stat { return results.Stat{Median: v, Min: v, Max: v, N: 5} }
	d := &results.Dispatch{Method: "m", Points: []results.DispatchPoint{{Threads: 2, CPUs: []int{0, 1}, CallSeconds: st(1.5e-6), WakeSeconds: st(300e-6)}},
		ColdVector: &results.ColdVector{Method: "cv", Elems: 1024, Bytes: 12288, EvictBytes: 64 << 20, Seconds: st(1.2e-6), SecondsPerLine: 6.25e-9},
		CoreToCore: &results.CoreToCore{Method: "cc", Threads: 2, CPUs: []int{0, 1}, Bytes: 256 << 10, GBps: st(60), LocalGBps: st(300)}}
	var b bytes.Buffer
	if err := dispatchMarkdown(&b, d); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Cold vector call: cv.", "Core-to-core reads: cc.", "neighbour's GB/s", "256 KiB", " 0.20 "} {
		if !strings.Contains(out, want) {
			t.Errorf("dispatch section lacks %q:\n%s", want, out)
		}
	}
	d.ColdVector = nil
	b.Reset()
	if err := dispatchMarkdown(&b, d); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "Core-to-core reads") || strings.Contains(out, "Cold vector call") {
		t.Errorf("without a cold vector call:\n%s", out)
	}
}
