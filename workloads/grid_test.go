package workloads

import (
	"slices"
	"strings"
	"testing"
)

func testGrid() Grid {
	return Grid{
		Models: []string{"qwen3-0.6b"}, Workloads: []string{"gsm8k", "ruler-4k"}, Batches: []int{1, 4}, Threads: []int{2},
		Placements: []string{"cores", "mixed"}, Ablations: []string{"", "partition", "packing"},
		Layers: 2, Requests: 4, Seed: 1, MaxGenTokens: 32, MaxPromptTokens: 2048, Skip: testSkip,
	}
}

// testSkip leaves out combinations as the sweep's rules do (package
// sweep has the engine's): partition only with mixed, quantized weights
// only on the cores and without the weight ablations.
func testSkip(c Cell) string {
	quantized := c.WeightDType != "" && c.WeightDType != "fp32"
	switch {
	case quantized && c.Placement != "cores":
		return "wdtype=" + c.WeightDType + " with placement=" + c.Placement + ": skipped"
	case c.Ablation == "partition" && c.Placement != "mixed":
		return "ablate=partition with placement=" + c.Placement + ": skipped"
	case quantized && c.Ablation != "" && c.Ablation != "kv-packing":
		return "wdtype=" + c.WeightDType + " with ablate=" + c.Ablation + ": skipped"
	}
	return ""
}

func TestGridCells(t *testing.T) {
	g := testGrid()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	cells, skipped := g.Cells()
	// 2 workloads × 2 batches × (cores: none, packing; mixed: none, partition, packing)
	if len(cells) != 2*2*5 {
		t.Fatalf("%d cells, want 20", len(cells))
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "ablate=partition with placement=cores: skipped") {
		t.Errorf("skipped %q", skipped)
	}
	want := "model=qwen3-0.6b/layers=2/workload=gsm8k/batch=1/threads=2/placement=cores/ablate=none/requests=4/arrival=closed/seed=1/maxgen=32/maxprompt=2048"
	if k := cells[0].Key(); k != want {
		t.Errorf("first key\n got %s\nwant %s", k, want)
	}
	var order []string
	keys := map[string]bool{}
	for i, c := range cells {
		if c.Index != i {
			t.Errorf("cell %d has index %d", i, c.Index)
		}
		if keys[c.Key()] {
			t.Errorf("duplicate key %s", c.Key())
		}
		keys[c.Key()] = true
		if i < 5 {
			order = append(order, c.Placement+"/"+c.Ablation)
		}
		if c.Ablation == "partition" && c.Placement == "cores" {
			t.Errorf("cell %d: partition ablation with cores", i)
		}
	}
	if !slices.Equal(order, []string{"cores/", "cores/packing", "mixed/", "mixed/partition", "mixed/packing"}) {
		t.Errorf("innermost order %v", order)
	}
	if cells[5].Batch != 4 || cells[10].Workload != "ruler-4k" {
		t.Errorf("order: cell 5 batch %d (want 4), cell 10 workload %s (want ruler-4k)", cells[5].Batch, cells[10].Workload)
	}
	// Deterministic, and the key does not depend on the index.
	again, _ := g.Cells()
	for i := range cells {
		if again[i] != cells[i] {
			t.Fatalf("cell %d differs between calls", i)
		}
	}
	g.Workloads = []string{"ruler-4k"}
	small, _ := g.Cells()
	if small[0].Key() != cells[10].Key() {
		t.Errorf("key changed with the grid: %s vs %s", small[0].Key(), cells[10].Key())
	}
}

func TestCellKeyEscapes(t *testing.T) {
	c := Cell{Model: "/tmp/my model/config.json", Weights: "a=b/x.bin", Workload: "gsm8k", Batch: 1, Threads: 1,
		Placement: "cores", Requests: 2, Arrival: Poisson(2.5), Seed: 7}
	k := c.Key()
	if !strings.HasPrefix(k, "model=%2Ftmp%2Fmy%20model%2Fconfig.json/weights=a%3Db%2Fx.bin/layers=0/") ||
		!strings.Contains(k, "/arrival=poisson:2.5/seed=7/") || strings.ContainsAny(k, " \t") {
		t.Errorf("key %s", k)
	}
	for _, p := range strings.Split(k, "/") {
		if strings.Count(p, "=") != 1 {
			t.Errorf("part %q of %s does not split on one '='", p, k)
		}
	}
	c.Weights = "synthetic"
	if strings.Contains(c.Key(), "weights=") {
		t.Errorf("synthetic weights in the key: %s", c.Key())
	}
}

func TestGridValidate(t *testing.T) {
	cases := []struct {
		edit func(*Grid)
		want string
	}{
		{func(g *Grid) { g.Workloads = []string{"gsm8k", "mmlu"} }, `unknown workload "mmlu"`},
		{func(g *Grid) { g.Batches = []int{1, 0} }, "batch 0: must be ≥ 1"},
		{func(g *Grid) { g.Threads = nil }, "no threads values"},
		{func(g *Grid) { g.Batches = []int{4, 4} }, "batch 4 is listed twice"},
		{func(g *Grid) { g.Models = nil }, "no models"},
		{func(g *Grid) { g.Workloads = []string{"gsm8k", "gsm8k"} }, `"gsm8k" is listed twice`},
		{func(g *Grid) { g.Requests = 0 }, "requests 0"},
		{func(g *Grid) { g.MaxPromptTokens = -1 }, "max prompt tokens -1"},
		{func(g *Grid) { g.Layers = -2 }, "layers -2"},
	}
	for _, c := range cases {
		g := testGrid()
		c.edit(&g)
		err := g.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error containing %q, got %v", c.want, err)
		}
	}
}

func TestParseIntList(t *testing.T) {
	good := map[string][]int{
		"1,2,4":      {1, 2, 4},
		"1..4":       {1, 2, 3, 4},
		"16":         {16},
		" 8 , 1..2 ": {8, 1, 2},
		"3..3":       {3},
	}
	for s, want := range good {
		got, err := ParseIntList(s)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseIntList(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	bad := map[string]string{
		"":        "empty list",
		"1,,2":    "empty item",
		"1,x":     `"x" is not an integer`,
		"4..1":    "ends before it starts",
		"1..2,2":  "2 is listed twice",
		"1..1e9":  "not an integer",
		"1..9999": "more than 4096 values",
		"2.5":     "not an integer",
	}
	for s, want := range bad {
		if _, err := ParseIntList(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseIntList(%q) error %v, want %q", s, err, want)
		}
	}
}

func TestParseList(t *testing.T) {
	got, err := ParseList("gsm8k, ruler-4k")
	if err != nil || !slices.Equal(got, []string{"gsm8k", "ruler-4k"}) {
		t.Errorf("ParseList = %v, %v", got, err)
	}
	for s, want := range map[string]string{"a,,b": "empty item", "a,b,a": `"a" is listed twice`, " ": "empty list"} {
		if _, err := ParseList(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseList(%q) error %v, want %q", s, err, want)
		}
	}
}

// A weight-dtype axis: one cell set per format, the key says the format,
// and quantized formats skip the placements and ablations the engine
// refuses for them (kv-packing applies to them: it is about the KV cache).
func TestGridWeightDTypes(t *testing.T) {
	g := testGrid()
	g.WeightDTypes = []string{"fp32", "q4_0"}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	cells, skipped := g.Cells()
	// fp32: 20 cells as TestGridCells; q4_0: cores with no ablation only, 2 workloads × 2 batches.
	if len(cells) != 20+4 {
		t.Fatalf("%d cells, want 24", len(cells))
	}
	for _, c := range cells {
		if c.WeightDType == "q4_0" && (c.Placement != "cores" || c.Ablation != "") {
			t.Errorf("cell %s: quantized with placement %s ablation %q", c.Key(), c.Placement, c.Ablation)
		}
		if !strings.Contains(c.Key(), "/wdtype="+c.WeightDType+"/") {
			t.Errorf("key %s lacks wdtype=%s", c.Key(), c.WeightDType)
		}
	}
	all := strings.Join(skipped, "\n")
	for _, w := range []string{"wdtype=q4_0 with placement=mixed: skipped", "wdtype=q4_0 with ablate=packing: skipped"} {
		if !strings.Contains(all, w) {
			t.Errorf("skipped lacks %q:\n%s", w, all)
		}
	}
	g.Ablations = []string{"", "kv-packing"}
	cells, _ = g.Cells()
	kv := 0
	for _, c := range cells {
		if c.WeightDType == "q4_0" && c.Ablation == "kv-packing" {
			kv++
		}
	}
	if kv != 4 {
		t.Errorf("%d q4_0 kv-packing cells, want 4 (cores × 2 workloads × 2 batches)", kv)
	}
	g.WeightDTypes = []string{"q4_0", "q4_0"}
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), `"q4_0" is listed twice`) {
		t.Errorf("repeated dtype: %v", err)
	}
}

// TestGridArrivals: a rate sweep is one more axis, innermost; each
// arrival process is its own cell with its own key.
func TestGridArrivals(t *testing.T) {
	arr, err := ParseArrivals("closed,poisson:0.5,poisson:2")
	if err != nil || len(arr) != 3 || arr[1] != Poisson(0.5) {
		t.Fatalf("ParseArrivals = %v, %v", arr, err)
	}
	g := testGrid()
	g.Workloads, g.Batches, g.Placements, g.Ablations = []string{"gsm8k"}, []int{1}, []string{"cores"}, []string{""}
	g.Arrivals = arr
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	cells, _ := g.Cells()
	if len(cells) != 3 {
		t.Fatalf("%d cells, want 3", len(cells))
	}
	keys := map[string]bool{}
	for i, c := range cells {
		if c.Arrival != arr[i] {
			t.Errorf("cell %d arrival %v, want %v", i, c.Arrival, arr[i])
		}
		keys[c.Key()] = true
	}
	if len(keys) != 3 || !strings.Contains(cells[2].Key(), "arrival=poisson:2") {
		t.Errorf("keys %v", keys)
	}
	for _, bad := range []string{"closed,closed", "poisson:1,poisson:1", "poisson:0", "poisson:x,closed", ""} {
		if _, err := ParseArrivals(bad); err == nil {
			t.Errorf("ParseArrivals(%q): no error", bad)
		}
	}
	g.Arrivals = []Arrival{Poisson(1), Poisson(1)}
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "poisson:1") {
		t.Errorf("repeated arrival: %v", err)
	}
}
