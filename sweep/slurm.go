package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/workloads"
)

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./,:=+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shQuote(a)
	}
	return strings.Join(q, " ")
}

// emitSlurm writes DIR/jobs: sweep.sbatch (a job array, one task per cell:
// 'bench sweep <flags> --cell N --out DIR/cells/N'), merge.sbatch ('bench
// report --merge DIR --out DIR', which reads DIR/cells/*/cells.jsonl, to
// run after the array with --dependency=afterok), submit.sh (submits both)
// and cells.txt (index and key of each cell). Paths in the scripts are absolute; the bench binary
// is this one unless $BENCH is set when the jobs run.
func emitSlurm(o *Options, cells []workloads.Cell, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("sweep: --out %s: %w", dir, err)
	}
	jobs := filepath.Join(abs, "jobs")
	if err := os.MkdirAll(filepath.Join(jobs, "logs"), 0o755); err != nil {
		return fmt.Errorf("sweep: --out %s: %w", dir, err)
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "bench"
	}
	if e, err := filepath.EvalSymlinks(exe); err == nil {
		exe = e
	}
	threads := slices.Max(o.grid.Threads)
	args := append([]string{"sweep"}, o.args(true)...)

	var idx strings.Builder
	for _, c := range cells {
		fmt.Fprintf(&idx, "%d\t%s\n", c.Index, c.Key())
	}
	array := fmt.Sprintf(`#!/bin/bash
# bench sweep as a Slurm job array: task N runs cell N of the grid (see
# cells.txt) and writes %[1]s/cells/N/. Submit with submit.sh, which also
# queues merge.sbatch to run after every task succeeded.
#SBATCH --job-name=bench-sweep
#SBATCH --array=0-%[2]d
#SBATCH --cpus-per-task=%[3]d
#SBATCH --output=%[1]s/jobs/logs/cell-%%a.out
# For timings free of other jobs on the node, uncomment:
##SBATCH --exclusive
set -euo pipefail
BENCH=${BENCH:-%[4]s}
exec "$BENCH" %[5]s --cell "$SLURM_ARRAY_TASK_ID" --out %[6]s/"$SLURM_ARRAY_TASK_ID"
`, abs, len(cells)-1, threads, shQuote(exe), shJoin(args), shQuote(filepath.Join(abs, "cells")))

	merge := fmt.Sprintf(`#!/bin/bash
# Merges the job array's per-cell results (%[1]s/cells/*/cells.jsonl)
# into %[1]s/cells.jsonl and renders the report there. Queue it after the
# array:
#   sbatch --dependency=afterok:<array job id> merge.sbatch
# (submit.sh does). afterok waits for every task to succeed; a failed cell
# can be rerun with 'sbatch --array=N sweep.sbatch' and merged again.
#SBATCH --job-name=bench-sweep-merge
#SBATCH --cpus-per-task=1
#SBATCH --output=%[1]s/jobs/logs/merge.out
set -euo pipefail
BENCH=${BENCH:-%[2]s}
exec "$BENCH" report --merge %[3]s --out %[3]s
`, abs, shQuote(exe), shQuote(abs))

	submit := fmt.Sprintf(`#!/bin/sh
# Submits the sweep's job array and, after it, the merge.
set -eu
cd %[1]s
array=$(sbatch --parsable sweep.sbatch)
array=${array%%%%;*} # --parsable prints "jobid[;cluster]"
merge=$(sbatch --parsable --dependency=afterok:"$array" merge.sbatch)
echo "bench sweep: array job $array (%[2]d cells), merge job ${merge%%%%;*}"
`, shQuote(jobs), len(cells))

	files := []struct {
		name string
		data string
		perm os.FileMode
	}{
		{"cells.txt", idx.String(), 0o644},
		{"sweep.sbatch", array, 0o755},
		{"merge.sbatch", merge, 0o755},
		{"submit.sh", submit, 0o755},
	}
	for _, f := range files {
		if err := results.WriteFileAtomic(filepath.Join(jobs, f.name), []byte(f.data), f.perm); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	}
	if !o.ThreadsGiven {
		fmt.Fprintf(o.Stderr, "sweep: --threads not given: every task uses %d threads, this machine's CPUs; pass --threads for the fleet's nodes\n", threads)
	}
	fmt.Fprintf(o.Stderr, "sweep: wrote %s (sweep.sbatch: %d array tasks; merge.sbatch; submit.sh; cells.txt); submit with: sh %s\n",
		jobs, len(cells), filepath.Join(jobs, "submit.sh"))
	return nil
}
