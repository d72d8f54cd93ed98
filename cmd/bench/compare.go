package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cpubench/bench/reports"
	"github.com/cpubench/bench/results"
)

func init() { subcommands = append(subcommands, newCompareCmd) }

// CompareOptions are the parsed arguments of `bench compare`.
type CompareOptions struct {
	IO    IO
	Paths []string
}

func newCompareCmd(streams IO) *cobra.Command {
	opts := &CompareOptions{IO: streams}
	return &cobra.Command{
		Use:     "compare PROFILE.json PROFILE.json [PROFILE.json...]",
		Short:   "Print two or more profiles side by side (Markdown table)",
		Example: `  bench compare results/a-20261121-101500/profile.json results/b-20261121-111500/profile.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return fmt.Errorf("compare: need at least two profile.json files, got %d", len(args))
			}
			opts.Paths = args
			return compareRun(cmd.Context(), opts)
		},
	}
}

func compareRun(ctx context.Context, opts *CompareOptions) error {
	var ps []*results.Profile
	var names []string
	for _, path := range opts.Paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := results.ReadProfile(path)
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		ps = append(ps, p)
		names = append(names, filepath.Base(filepath.Dir(path)))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return reports.Compare(opts.IO.Out, names, ps)
}
