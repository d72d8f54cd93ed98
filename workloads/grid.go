package workloads

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Grid is the cartesian product a sweep runs: every model × workload ×
// batch × threads × placement × ablation × arrival process, with the
// fixed settings below shared by every cell.
type Grid struct {
	Models    []string // shipped model names or config.json paths; with a checkpoint in Weights, a label for it
	Workloads []string // workload names (see Lookup)
	Batches   []int    // decode slots (ReplayOptions.Batch)
	Threads   []int    // worker threads
	// Placements are where a cell runs its linear operators (engine
	// placement names, checked by the caller).
	Placements []string
	// Ablations lists the variants: "" is none (the full system), else
	// an engine ablation name (checked by the caller).
	Ablations []string
	// WeightDTypes lists the linear weights' formats to run each model in
	// (bench run's --weight-dtype names, checked by the caller: fp32,
	// q8_0, q4_0, int2, int1, ...); empty means one run as loaded.
	WeightDTypes []string

	Weights  string // "synthetic" or a checkpoint path ("" means synthetic)
	Layers   int    // decoder layers instantiated (0: all)
	Requests int    // requests per cell's trace
	// Arrivals are the traces' arrival processes (closed, or Poisson at
	// several rates: a rate sweep for serving curves, Sandwich §8.1); empty
	// means closed.
	Arrivals        []Arrival
	Seed            uint64 // trace and weight seed
	MaxGenTokens    int    // output cap per request (0: none)
	MaxPromptTokens int    // prompt cap per request (0: none)
	// CoresBackend and MatrixBackend name the gemm backends of the
	// placements' cores and matrix targets ("": the engine's choice by
	// capability), checked by the caller.
	CoresBackend, MatrixBackend string
	// PrefillConfig and DecodeConfig are the per-phase service
	// configurations every cell runs (Sandwich §3.2–3.3; bench sweep
	// --prefill-config, --decode-config, "auto" for --configs auto; "":
	// every worker runs both phases), checked by the caller.
	PrefillConfig, DecodeConfig string
	// Skip, when set, leaves combinations out of Cells: given a cell (its
	// Index not yet set) it returns why it is left out, one line that is
	// the same for every cell left out for one reason, or "" to keep it.
	Skip func(Cell) string
}

// Cell is one point of a Grid.
type Cell struct {
	Index int // position in Grid.Cells
	Model string
	// Weights is "synthetic" or a checkpoint path.
	Weights string
	// WeightDType is the linear weights' format ("": as loaded).
	WeightDType string
	Layers      int
	Workload    string
	Batch       int
	Threads     int
	Placement   string
	Ablation    string // "" for none

	Requests        int
	Arrival         Arrival
	Seed            uint64
	MaxGenTokens    int
	MaxPromptTokens int
	// CoresBackend and MatrixBackend are Grid's ("": the engine's choice).
	CoresBackend, MatrixBackend string
	// PrefillConfig and DecodeConfig are Grid's ("": none).
	PrefillConfig, DecodeConfig string
}

// KeyPart is one key=value part of a cell's key.
type KeyPart struct{ Key, Value string }

// Parts are the cell's coordinates and settings in key order, values
// escaped (EscapeKeyValue): model, weights (only when not synthetic),
// wdtype (only when set), layers, workload, batch, threads, placement, ablate ("none" for no
// ablation), requests, arrival, seed, maxgen, maxprompt, cores and
// matrix (the backends, only when named), and prefill and decode (the
// per-phase configurations, only when set).
func (c Cell) Parts() []KeyPart {
	abl := c.Ablation
	if abl == "" {
		abl = "none"
	}
	ps := []KeyPart{{"model", c.Model}}
	if c.Weights != "" && c.Weights != "synthetic" {
		ps = append(ps, KeyPart{"weights", c.Weights})
	}
	if c.WeightDType != "" {
		ps = append(ps, KeyPart{"wdtype", c.WeightDType})
	}
	ps = append(ps,
		KeyPart{"layers", strconv.Itoa(c.Layers)},
		KeyPart{"workload", c.Workload},
		KeyPart{"batch", strconv.Itoa(c.Batch)},
		KeyPart{"threads", strconv.Itoa(c.Threads)},
		KeyPart{"placement", c.Placement},
		KeyPart{"ablate", abl},
		KeyPart{"requests", strconv.Itoa(c.Requests)},
		KeyPart{"arrival", c.Arrival.String()},
		KeyPart{"seed", strconv.FormatUint(c.Seed, 10)},
		KeyPart{"maxgen", strconv.Itoa(c.MaxGenTokens)},
		KeyPart{"maxprompt", strconv.Itoa(c.MaxPromptTokens)},
	)
	if c.CoresBackend != "" {
		ps = append(ps, KeyPart{"cores", c.CoresBackend})
	}
	if c.MatrixBackend != "" {
		ps = append(ps, KeyPart{"matrix", c.MatrixBackend})
	}
	if c.PrefillConfig != "" || c.DecodeConfig != "" {
		ps = append(ps, KeyPart{"prefill", c.PrefillConfig}, KeyPart{"decode", c.DecodeConfig})
	}
	for i := range ps {
		ps[i].Value = EscapeKeyValue(ps[i].Value)
	}
	return ps
}

// Key identifies the cell: its Parts as "key=value" joined by "/", e.g.
// "model=qwen3-0.6b/layers=2/workload=gsm8k/batch=4/threads=2/placement=mixed/ablate=none/requests=4/arrival=closed/seed=1/maxgen=32/maxprompt=2048".
// It depends only on what the cell measures (not on its Index), so a
// results file can be resumed by a grid that grew or shrank.
func (c Cell) Key() string {
	var b strings.Builder
	for i, p := range c.Parts() {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(p.Key + "=" + p.Value)
	}
	return b.String()
}

// Trace builds the cell's request trace (Build with its workload,
// requests, arrival and seed).
func (c Cell) Trace() (*Trace, error) {
	return Build(c.Workload, c.Requests, c.Arrival, c.Seed)
}

// EscapeKeyValue escapes s for a key part or a benchmark-name part: '%',
// '/', '=', spaces and control characters become %XX, so keys split
// unambiguously on '/' and '=' and contain no white space.
func EscapeKeyValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c == '/' || c == '=' || c <= ' ' || c == 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Validate checks the grid: every axis non-empty without repeats, batch and
// threads ≥ 1, known workloads, and sane fixed settings (placement and
// ablation names are the caller's to check). Errors name the value.
func (g Grid) Validate() error {
	axes := []struct {
		name string
		vals []string
	}{{"models", g.Models}, {"workloads", g.Workloads}, {"placements", g.Placements}, {"ablations", g.Ablations}}
	for _, a := range axes {
		if len(a.vals) == 0 {
			return fmt.Errorf("grid: no %s", a.name)
		}
		if d := firstDup(a.vals); d >= 0 {
			return fmt.Errorf("grid: %s: %q is listed twice", a.name, a.vals[d])
		}
	}
	if d := firstDup(g.WeightDTypes); d >= 0 {
		return fmt.Errorf("grid: weight dtypes: %q is listed twice", g.WeightDTypes[d])
	}
	for _, a := range []struct {
		name string
		vals []int
	}{{"batch", g.Batches}, {"threads", g.Threads}} {
		if len(a.vals) == 0 {
			return fmt.Errorf("grid: no %s values", a.name)
		}
		if d := firstDup(a.vals); d >= 0 {
			return fmt.Errorf("grid: %s %d is listed twice", a.name, a.vals[d])
		}
		for _, v := range a.vals {
			if v < 1 {
				return fmt.Errorf("grid: %s %d: must be ≥ 1", a.name, v)
			}
		}
	}
	for _, m := range g.Models {
		if m == "" {
			return fmt.Errorf("grid: empty model name")
		}
	}
	for _, w := range g.Workloads {
		if _, err := Lookup(w); err != nil {
			return fmt.Errorf("grid: %w", err)
		}
	}
	switch {
	case g.Layers < 0:
		return fmt.Errorf("grid: layers %d: must be ≥ 0 (0: all)", g.Layers)
	case g.Requests < 1:
		return fmt.Errorf("grid: requests %d: must be ≥ 1", g.Requests)
	case g.MaxGenTokens < 0:
		return fmt.Errorf("grid: max gen tokens %d: must be ≥ 0 (0: no cap)", g.MaxGenTokens)
	case g.MaxPromptTokens < 0:
		return fmt.Errorf("grid: max prompt tokens %d: must be ≥ 0 (0: no cap)", g.MaxPromptTokens)
	}
	for _, a := range g.Arrivals {
		if a.Rate < 0 {
			return fmt.Errorf("grid: arrival rate %v: must be ≥ 0", a.Rate)
		}
	}
	if d := firstDup(g.Arrivals); d >= 0 {
		return fmt.Errorf("grid: arrivals: %s is listed twice", g.Arrivals[d])
	}
	return nil
}

func firstDup[T comparable](vals []T) int {
	for i, v := range vals {
		if slices.Index(vals, v) != i {
			return i
		}
	}
	return -1
}

// Cells lists the grid's cells in a deterministic order: models outermost,
// then weight dtypes, workloads, batches, threads, placements, ablations
// and arrivals, each in the order given, less those g.Skip leaves out;
// skipped says why, one line per reason. Index is the position in cells.
// Cells assumes Validate passed.
func (g Grid) Cells() (cells []Cell, skipped []string) {
	weights := g.Weights
	if weights == "" {
		weights = "synthetic"
	}
	noted := map[string]bool{}
	dtypes := g.WeightDTypes
	if len(dtypes) == 0 {
		dtypes = []string{""}
	}
	arrivals := g.Arrivals
	if len(arrivals) == 0 {
		arrivals = []Arrival{Closed}
	}
	skip := func(why string) {
		if !noted[why] {
			noted[why] = true
			skipped = append(skipped, why)
		}
	}
	for _, m := range g.Models {
		for _, d := range dtypes {
			for _, w := range g.Workloads {
				for _, b := range g.Batches {
					for _, t := range g.Threads {
						for _, p := range g.Placements {
							for _, a := range g.Ablations {
								for _, arr := range arrivals {
									c := Cell{Model: m, Weights: weights, WeightDType: d, Layers: g.Layers, Workload: w,
										Batch: b, Threads: t, Placement: p, Ablation: a, Requests: g.Requests, Arrival: arr,
										Seed: g.Seed, MaxGenTokens: g.MaxGenTokens, MaxPromptTokens: g.MaxPromptTokens,
										CoresBackend: g.CoresBackend, MatrixBackend: g.MatrixBackend,
										PrefillConfig: g.PrefillConfig, DecodeConfig: g.DecodeConfig}
									if g.Skip != nil {
										if why := g.Skip(c); why != "" {
											skip(why)
											continue
										}
									}
									c.Index = len(cells)
									cells = append(cells, c)
								}
							}
						}
					}
				}
			}
		}
	}
	return cells, skipped
}

// maxListLen bounds what a range like 1..N expands to.
const maxListLen = 4096

// ParseIntList reads a comma-separated list of integers and inclusive
// ranges, e.g. "1,2,4" or "1..16" or "1,8..10" (= 1,8,9,10). Values keep
// the order given; a repeated value is an error.
func ParseIntList(s string) ([]int, error) {
	items, err := splitList(s)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, it := range items {
		lo, hi, isRange := strings.Cut(it, "..")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("%q: %q is not an integer", s, strings.TrimSpace(lo))
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
				return nil, fmt.Errorf("%q: %q is not an integer", s, strings.TrimSpace(hi))
			}
			if b < a {
				return nil, fmt.Errorf("%q: range %s ends before it starts", s, it)
			}
			if b-a >= maxListLen {
				return nil, fmt.Errorf("%q: range %s has more than %d values", s, it, maxListLen)
			}
		}
		for v := a; v <= b; v++ {
			if slices.Contains(out, v) {
				return nil, fmt.Errorf("%q: %d is listed twice", s, v)
			}
			out = append(out, v)
			if len(out) > maxListLen {
				return nil, fmt.Errorf("%q: more than %d values", s, maxListLen)
			}
		}
	}
	return out, nil
}

// ParseList reads a comma-separated list of names (spaces around items
// trimmed). An empty item or a repeated name is an error.
func ParseList(s string) ([]string, error) {
	items, err := splitList(s)
	if err != nil {
		return nil, err
	}
	if d := firstDup(items); d >= 0 {
		return nil, fmt.Errorf("%q: %q is listed twice", s, items[d])
	}
	return items, nil
}

func splitList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty list")
	}
	items := strings.Split(s, ",")
	for i, it := range items {
		items[i] = strings.TrimSpace(it)
		if items[i] == "" {
			return nil, fmt.Errorf("%q: empty item", s)
		}
	}
	return items, nil
}
