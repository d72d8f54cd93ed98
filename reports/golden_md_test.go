package reports

// Golden Markdown tests (issue 17 part 6): bench report's report.md for
// the fixture sweeps the other tests use, and bench probe's profile.md
// for the all-sections fixture profile, compared byte for byte with
// testdata/golden/*.md. Everything in them comes from the input (cell
// dates, machine and host names, the profile's created_at), nothing from
// the clock or this host. After an intended change to a table or
// caption, regenerate them with the figures' flag and review the diff:
//
//	go test ./reports -update    (or -run TestGoldenMarkdown -update)

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/roofline"
)

// goldenSweepMD renders report.md for cells (figures captured, not
// encoded) and returns it.
func goldenSweepMD(t *testing.T, cells []results.SweepCell, so SweepOptions) []byte {
	t.Helper()
	so.Figures = newCapture()
	dir := t.TempDir()
	if _, err := Sweep(cells, dir, so); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// missingDataCells are TestSweepMissingData's cells: two placements, no
// cores, no operators, one batch.
func missingDataCells() []results.SweepCell {
	var cells []results.SweepCell
	for _, p := range []string{"matrix", "mixed"} {
		cells = append(cells, results.SweepCell{Schema: results.SweepSchema, Key: "k/" + p, Model: "tiny", Workload: "gsm8k",
			Batch: 4, Threads: 1, Placement: p, Host: "h", Date: "2026-03-01T00:00:00Z",
			Latency: results.Dist{Mean: 1, P50: 1, P90: 1, P99: 1, N: 1}, OutputTokS: 10})
	}
	return cells
}

// goldenMarkdown renders every golden Markdown file from fixed inputs.
func goldenMarkdown(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	// m1's machine has an fp32 ceiling, so its regimes are classified;
	// m2 has none (the note and the fallback colouring).
	m1 := &roofline.Machine{Schema: roofline.MachineSchemaV1, Name: "m1", Targets: []roofline.Target{
		{Name: "cores", Kind: roofline.KindCores, CeilingsGFLOPS: map[string]float64{"fp32": 100}, BandwidthGBps: 10},
	}}
	// The full fixture sweep as bench report renders it with a baseline
	// and a machine profile: every section, two machines, an ablation.
	out["sweep-report"] = goldenSweepMD(t, withRequests(synthCells()), SweepOptions{
		Machines: map[string]*roofline.Machine{"m1": m1},
		Baseline: testBaseline(t),
		Sources:  []string{"results/sweep-m1-20260301/cells.jsonl", "results/sweep-m2-20260302/cells.jsonl"},
		Command:  "bench report results/sweep-m1-20260301 results/sweep-m2-20260302 --out report --baseline llama-bench.json",
	})
	// Missing data: every skip note.
	out["sweep-report-missing"] = goldenSweepMD(t, missingDataCells(), SweepOptions{Command: "bench report results/sweep-h --out report"})
	// bench probe's profile.md for the all-sections fixture.
	p := allSections(t)
	plots, err := ProfilePlots(p, t.TempDir(), newCapture())
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := ProfileMarkdown(&md, p, plots); err != nil {
		t.Fatal(err)
	}
	out["profile"] = md.Bytes()
	return out
}

func TestGoldenMarkdown(t *testing.T) {
	checkGolden(t, goldenMarkdown(t), "md", "TestGoldenMarkdown", mdDiff)
}

// mdDiff returns "" or the first differing line of two renderings.
func mdDiff(got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		switch {
		case i >= len(gl) || i >= len(wl):
			return fmt.Sprintf("line %d: %d lines, want %d", i+1, len(gl), len(wl))
		case gl[i] != wl[i]:
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, clip(gl[i]), clip(wl[i]))
		}
	}
	return "the bytes differ"
}

// TestGoldenMarkdownDeterministic: two renderings are the same bytes, the
// second under another local time zone, and none carries today's date or
// this host's name unless its input does (what they show comes from the
// input, not the clock or the machine running the report).
func TestGoldenMarkdownDeterministic(t *testing.T) {
	a := goldenMarkdown(t)
	local := time.Local
	time.Local = time.FixedZone("BENCHTEST", 5*3600+30*60)
	b := goldenMarkdown(t)
	time.Local = local
	var input bytes.Buffer
	for _, v := range []any{synthCells(), missingDataCells()} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		input.Write(data)
	}
	for _, f := range []string{"../results/testdata/profile-amd-epyc-2core-all-sections.json", "testdata/llama-bench-fixture.json"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		input.Write(data)
	}
	host, _ := os.Hostname()
	now := time.Now()
	for name, md := range a {
		if !bytes.Equal(md, b[name]) {
			t.Errorf("%s: two renderings differ (the second in another time zone): %s", name, mdDiff(md, b[name]))
		}
		for _, s := range []string{now.Format("2006-01-02"), now.UTC().Format("2006-01-02"), host, "BENCHTEST"} {
			if len(s) >= 4 && bytes.Contains(md, []byte(s)) && !bytes.Contains(input.Bytes(), []byte(s)) {
				t.Errorf("%s contains %q, which is not in its input", name, s)
			}
		}
	}
}
