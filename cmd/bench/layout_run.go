package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cpubench/bench/engine"
)

// The PIM-SHERPA weight layout flags of `bench run` (engine/layout.go).

func addLayoutFlags(f *pflag.FlagSet, o *runOptions) {
	f.StringVar(&o.WeightLayout, "weight-layout", "", "PIM-SHERPA weight layout policy: duplicate (row-major decode layout and gemm panels both resident), owr (decode layout only; each prefill GEMM's weight rearranged into one buffer first) or ddb (decode layout only; copy threads rearrange the next group of matrices into one of two buffers, each the largest matrix, while the current group computes); default: the packed engine (fp32 weights, placement cores, dense models only)")
	f.IntVar(&o.CopyThreads, "copy-threads", 0, "ddb: dedicated copy threads, taken out of --threads (0: 1)")
}

func (o *runOptions) validateLayout() error {
	if _, err := engine.ParseWeightLayout(o.WeightLayout); err != nil {
		return fmt.Errorf("run: --weight-layout: %w", err)
	}
	switch {
	case o.CopyThreads < 0:
		return fmt.Errorf("run: --copy-threads %d: must be ≥ 0 (0: 1)", o.CopyThreads)
	case o.CopyThreads > 0 && o.WeightLayout != string(engine.LayoutDDB):
		return fmt.Errorf("run: --copy-threads %d: only with --weight-layout ddb", o.CopyThreads)
	case o.WeightLayout != "" && o.Placement != string(engine.PlaceCores):
		return fmt.Errorf("run: --weight-layout %s: with --placement %s: placement cores only", o.WeightLayout, o.Placement)
	case o.WeightLayout != "" && o.WeightDType != "" && o.WeightDType != engine.FormatFP32:
		return fmt.Errorf("run: --weight-layout %s: policy unsupported by weight format %s (fp32 only: quantized matrices have one layout)", o.WeightLayout, o.WeightDType)
	}
	return nil
}

// runLayout is the weight layout policy's part of `bench run --json`:
// resident bytes, the resident set and the rearrangement timings of the
// timed prefills.
type runLayout struct {
	Policy         string  `json:"policy"`
	ComputeThreads int     `json:"compute_threads"`
	CopyThreads    int     `json:"copy_threads,omitempty"`
	CopyCPUs       []int   `json:"copy_cpus,omitempty"`
	DecodeBytes    int64   `json:"decode_layout_bytes"`
	PrefillBytes   int64   `json:"prefill_layout_bytes"`
	BufferBytes    int64   `json:"buffer_bytes"`
	ResidentBytes  int64   `json:"resident_weight_bytes"`
	RSSBytes       int64   `json:"vm_rss_bytes,omitempty"`
	RSSNote        string  `json:"vm_rss_note,omitempty"`
	Prefills       int     `json:"prefills"`
	CopyS          float64 `json:"copy_s_per_prefill"`
	CopyBusyS      float64 `json:"copy_busy_s_per_prefill"`
	CopyBytes      int64   `json:"copy_bytes_per_prefill"`
	CopyGBps       float64 `json:"copy_gbps"`
	PreloadS       float64 `json:"preload_s_per_prefill,omitempty"`
	WaitS          float64 `json:"wait_s_per_prefill,omitempty"`
	Waits          int     `json:"waits,omitempty"`
	Note           string  `json:"note,omitempty"`
}

// measuredLayout reads the model's policy figures after the timed
// prefills (nil without a policy) and the process's VmRSS now.
func measuredLayout(m *engine.Model, prefills int) *runLayout {
	s := m.Layout()
	if s.Policy == "" {
		return nil
	}
	n := float64(max(s.Prefills, 1))
	r := &runLayout{Policy: string(s.Policy), ComputeThreads: s.ComputeThreads, CopyThreads: s.CopyThreads, CopyCPUs: s.CopyCPUs,
		DecodeBytes: s.DecodeBytes, PrefillBytes: s.PrefillBytes, BufferBytes: s.BufferBytes, ResidentBytes: s.ResidentBytes,
		Prefills: s.Prefills, CopyS: s.CopySeconds / n, CopyBusyS: s.CopyBusySeconds / n, CopyBytes: s.CopyBytes / int64(max(s.Prefills, 1)),
		CopyGBps: s.CopyGBps(), PreloadS: s.PreloadSeconds / n, WaitS: s.WaitSeconds / n, Waits: s.Waits, Note: s.CopyNote}
	if rss, err := engine.ResidentSetBytes(); err != nil {
		r.RSSNote = err.Error()
	} else {
		r.RSSBytes = rss
		r.RSSNote = "VmRSS of the whole process after the timed run (weights as loaded, buffers, KV caches, Go heap)"
	}
	return r
}

func writeRunLayout(w io.Writer, r *runLayout) error {
	fmt.Fprintf(w, "\nweight layout %s (PIM-SHERPA): %d compute thread(s)", r.Policy, r.ComputeThreads)
	if r.CopyThreads > 0 {
		fmt.Fprintf(w, ", %d copy thread(s)", r.CopyThreads)
		if len(r.CopyCPUs) > 0 {
			fmt.Fprintf(w, " on CPUs %v", r.CopyCPUs)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	t := newMarkdown(w, "resident", "MB")
	mb := func(b int64) string { return fmt.Sprintf("%.4g", float64(b)/1e6) }
	t.Append([]string{"decode layout (row-major linears, embedding, norms)", mb(r.DecodeBytes)})
	t.Append([]string{"prefill layout (gemm panels, resident)", mb(r.PrefillBytes)})
	t.Append([]string{"rearrangement buffers", mb(r.BufferBytes)})
	t.Append([]string{"weights resident", mb(r.ResidentBytes)})
	if r.RSSBytes > 0 {
		t.Append([]string{"process VmRSS", mb(r.RSSBytes)})
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newMarkdown(w, "per prefill", "value")
	t.Append([]string{"rearrangement (copy) wall", fmtTime(r.CopyS)})
	if r.CopyThreads > 0 {
		t.Append([]string{"copy threads busy (Σ)", fmtTime(r.CopyBusyS)})
		t.Append([]string{"preload wait (layer 0)", fmtTime(r.PreloadS)})
		t.Append([]string{"compute waits (layers 1..)", fmt.Sprintf("%s (%d waits > 10 µs over %d prefills)", fmtTime(r.WaitS), r.Waits, r.Prefills)})
	}
	t.Append([]string{"bytes rearranged", mb(r.CopyBytes) + " MB"})
	if r.CopyGBps > 0 {
		t.Append([]string{"rearrangement bandwidth", fmt.Sprintf("%.3g GB/s (panel bytes written / copy wall)", r.CopyGBps)})
	}
	if err := t.Render(); err != nil {
		return err
	}
	var notes []string
	if r.RSSNote != "" {
		notes = append(notes, r.RSSNote)
	}
	if r.Note != "" {
		notes = append(notes, r.Note)
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "; "))
	}
	return nil
}
