package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/sweep"
	"github.com/cpubench/bench/workloads"
)

func init() { subcommands = append(subcommands, newWorkloadsCmd) }

// WorkloadsOptions are the parsed arguments of `bench workloads`.
type WorkloadsOptions struct {
	IO       IO
	Names    []string // workloads to list; all when empty
	Requests int
	Arrival  workloads.Arrival
	Seed     uint64
	JSON     string // --json: "", "-" (stdout) or a file (jsonflag.go)
	Dump     string // print this workload's requests as JSON lines
}

func newWorkloadsCmd(streams IO) *cobra.Command {
	opts := &WorkloadsOptions{IO: streams}
	var arrival string
	cmd := &cobra.Command{
		Use:   "workloads [NAME...]",
		Short: "List the request traces (GSM8K, LongWriter, RULER-4K/8K) with their token lengths",
		Long: `List the request traces built from the embedded data sets, with the mean and
percentiles of their prompt and output lengths in Qwen3 tokens.

  gsm8k       GSM8K test questions in Qwen's chat template; output = reference answer
  longwriter  LongBench-Write prompts in Qwen's chat template; output = required length
              converted to tokens (1.32 tokens/English word, 0.84 tokens/Chinese character)
  ruler-4k    RULER qa_1 (SQuAD) and qa_2 (HotpotQA), alternating, documents added until
  ruler-8k    prompt + 32 ≤ 4096 (8192) tokens; output = the gold answer

Requests are drawn per workload without repeats in a seeded order. --arrival closed
gives every request arrival 0 (a closed-loop replayer sends the next one when one
finishes); poisson:RATE gives exponential gaps with mean 1/RATE seconds.
Below the table: each trace's means beside SMEPilot Table 2's, with the causes of
each difference, measured where the embedded data allows (chat template,
GSM8K's calculator annotations, RULER's budget fill) and quoted otherwise.`,
		Example: `  bench workloads
  bench workloads ruler-8k --requests 500 --arrival poisson:2 --json
  bench workloads --dump gsm8k --requests 10`,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, n := range args {
				if _, err := workloads.Lookup(n); err != nil {
					if opts.JSON == jsonStdout {
						// "--json FILE": FILE is a trace name here.
						return fmt.Errorf("workloads: %w (to write the JSON to a file, give --json=%s)", err, n)
					}
					return fmt.Errorf("workloads: %w", err)
				}
			}
			if opts.Dump != "" {
				if _, err := workloads.Lookup(opts.Dump); err != nil {
					return fmt.Errorf("workloads: --dump: %w", err)
				}
			}
			if opts.Requests < 1 {
				return fmt.Errorf("workloads: --requests %d: must be ≥ 1", opts.Requests)
			}
			if err := checkJSONPath(opts.JSON); err != nil {
				return fmt.Errorf("workloads: %w", err)
			}
			traces := len(args)
			switch {
			case opts.Dump != "":
				traces = 1
			case traces == 0:
				traces = len(workloads.Names())
			}
			if err := sweep.CheckRequests(opts.Requests, traces); err != nil {
				return fmt.Errorf("workloads: %w", err)
			}
			a, err := workloads.ParseArrival(arrival)
			if err != nil {
				return fmt.Errorf("workloads: --arrival %w", err)
			}
			opts.Arrival, opts.Names = a, args
			return workloadsRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Requests, "requests", 200, "requests per trace")
	f.StringVar(&arrival, "arrival", "closed", "arrival process: closed or poisson:RATE (requests/s)")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the request order and arrival times")
	addJSONFlag(cmd, &opts.JSON, "one summary per trace (JSON lines)")
	f.StringVar(&opts.Dump, "dump", "", "print the requests of this workload's trace as JSON lines")
	return cmd
}

func workloadsRun(ctx context.Context, opts *WorkloadsOptions) error {
	if opts.Dump != "" {
		var t *workloads.Trace
		err := untilDone(ctx, func() (err error) {
			t, err = workloads.Build(opts.Dump, opts.Requests, opts.Arrival, opts.Seed)
			return err
		})
		if err != nil {
			return err
		}
		enc := json.NewEncoder(opts.IO.Out)
		for _, r := range t.Requests {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	names := opts.Names
	if len(names) == 0 {
		names = workloads.Names()
	}
	// The pools build on first use (tokenizing ~2.5 MB of text); build
	// the traces at once so the pools of different data sets build in
	// parallel.
	traces := make([]*workloads.Trace, len(names))
	errs := make([]error, len(names))
	err := untilDone(ctx, func() error {
		var wg sync.WaitGroup
		for i, n := range names {
			wg.Go(func() { traces[i], errs[i] = workloads.Build(n, opts.Requests, opts.Arrival, opts.Seed) })
		}
		wg.Wait()
		return nil
	})
	if err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	paper := make([][]workloads.PaperRow, len(traces))
	for i, t := range traces {
		if paper[i], err = workloads.VsSMEPilot(t); err != nil {
			return err
		}
	}
	js := newJSONOut(opts.JSON, opts.IO.Out)
	for i, t := range traces {
		out := struct {
			workloads.Summary
			SMEPilot []workloads.PaperRow `json:"smepilot_table2,omitempty"`
		}{workloads.Stats(t), paper[i]}
		if err := js.encode(out); err != nil {
			return err
		}
	}
	if err := js.flush(); err != nil {
		return fmt.Errorf("workloads: %w", err)
	}
	if !js.tables() {
		return nil
	}
	var rows [][]string
	for _, t := range traces {
		s := workloads.Stats(t)
		w, _ := workloads.Lookup(t.Name)
		rows = append(rows, []string{t.Name, strconv.Itoa(s.Requests), w.Dataset,
			fmt.Sprintf("%.1f", s.Prompt.Mean), fmt.Sprint(s.Prompt.P50), fmt.Sprint(s.Prompt.P90), fmt.Sprint(s.Prompt.P99),
			fmt.Sprintf("%.1f", s.Output.Mean), fmt.Sprint(s.Output.P50), fmt.Sprint(s.Output.P90), fmt.Sprint(s.Output.P99)})
	}
	if err := reports.TextTable(opts.IO.Out, []string{"workload", "requests", "source",
		"prompt mean", "p50", "p90", "p99", "output mean", "p50", "p90", "p99"}, rows); err != nil {
		return err
	}
	return paperTable(opts, paper)
}

// paperTable prints the traces' means beside SMEPilot Table 2's, one row
// per workload and phase, then why each pair differs.
func paperTable(opts *WorkloadsOptions, paper [][]workloads.PaperRow) error {
	var rows [][]string
	var why strings.Builder
	for _, rs := range paper {
		for _, r := range rs {
			rows = append(rows, []string{r.Workload, r.Phase, fmt.Sprintf("%.1f", r.Trace), fmt.Sprintf("%.0f", r.Paper), fmt.Sprintf("%.2f", r.Ratio)})
			fmt.Fprintf(&why, "%s %s:\n", r.Workload, r.Phase)
			for _, w := range r.Why {
				fmt.Fprintf(&why, "  - %s\n", w)
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(opts.IO.Out, "\nBeside SMEPilot Table 2 (§5.1, mean tokens; the trace's mean is of the requests above):")
	if err := reports.TextTable(opts.IO.Out, []string{"workload", "phase", "trace mean", "paper", "ratio"}, rows); err != nil {
		return err
	}
	_, err := fmt.Fprint(opts.IO.Out, "\nWhy they differ:\n"+why.String())
	return err
}
