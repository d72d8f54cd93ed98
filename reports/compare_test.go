package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cpubench/bench/results"
)

// TestCompareSignificance: bench compare says whether a difference is
// significant from the figures' repetitions (Mann-Whitney U, as benchstat),
// shows "~" when it is not, and marks noisy figures.
func TestCompareSignificance(t *testing.T) {
	prof := func(dram []float64, l1 []float64, noisy bool) *results.Profile {
		d := results.Summarize(dram)
		if noisy {
			d.Noise = &results.Noise{Attempts: 3, Noisy: true, Why: "cv 62.0% > 10%"}
		}
		return &results.Profile{Memory: &results.Memory{Levels: []results.LevelBandwidth{
			{Level: "DRAM", Threads: 1, GBps: d},
			{Level: "L1", Threads: 1, GBps: results.Summarize(l1)},
		}}}
	}
	a := prof([]float64{20, 20.1, 19.9, 20.2, 20.0, 19.8, 20.1}, []float64{100, 101, 99, 100, 102, 98, 100}, false)
	b := prof([]float64{30, 30.2, 29.9, 30.1, 30.3, 29.8, 30.0}, []float64{99, 102, 100, 101, 98, 100, 99}, true)
	var out bytes.Buffer
	if err := Compare(&out, []string{"a", "b"}, []*results.Profile{a, b}); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Split(line, "|"); len(f) > 2 {
			rows[strings.TrimSpace(f[1])] = line
		}
	}
	dram, l1 := rows["DRAM read GB/s, 1 thread(s)"], rows["L1 read GB/s, 1 thread(s)"]
	if !strings.Contains(dram, "1.50") || !strings.Contains(dram, "0.001") || !strings.Contains(dram, "NOISY") {
		t.Errorf("DRAM row: want ratio 1.50, p 0.001 and the NOISY mark:\n%s", dram)
	}
	if !strings.Contains(l1, "~") {
		t.Errorf("L1 row: same distribution, want ~:\n%s", l1)
	}
	if !strings.Contains(out.String(), "p (Mann-Whitney U)") {
		t.Errorf("no p-value column:\n%s", out.String())
	}
}
