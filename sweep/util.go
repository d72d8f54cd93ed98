package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/cpubench/bench/internal/memlimit"
	"github.com/cpubench/bench/results"
	"github.com/cpubench/bench/workloads"
)

// CheckRequests refuses --requests n whose traces (workloads.Build: n
// Requests each, traces of them built at once, and workloads.Stats' two
// float64 per request) do not fit in the memory this process may use
// (memlimit.Check), before they are built: one error naming the flag.
func CheckRequests(n, traces int) error {
	size := int(unsafe.Sizeof(workloads.Request{})) + 16
	what := fmt.Sprintf("--requests %d: a trace's requests (%d bytes each)", n, size)
	if traces > 1 {
		what = fmt.Sprintf("--requests %d: %d traces' requests (%d bytes each)", n, traces, size)
	}
	return memlimit.Check(what, memlimit.Mul(n, traces, size))
}

// prepareDir creates dir if needed and checks it is writable. undo
// removes what it created while still empty (results.MkdirAll).
func prepareDir(dir string) (undo func(), err error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return func() {}, errors.New("not a directory")
	}
	undo, err = results.MkdirAll(dir)
	if err != nil {
		return func() {}, results.UnwrapPath(err)
	}
	if err := results.CheckWritableDir(dir); err != nil {
		undo()
		return func() {}, err
	}
	return undo, nil
}

// untilDone runs f, which must write no file, and returns its error, or
// ctx's as soon as ctx is done: f (tokenizing the data sets, drawing
// synthetic weights: seconds that check no context) is then left to
// finish on its own as the process exits.
func untilDone(ctx context.Context, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newMarkdown(w io.Writer, header ...string) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header(header)
	return t
}

// FormatSeconds prints a time in s, ms, µs or ns with 3 significant
// digits ("0" for zero), as bench's tables do.
func FormatSeconds(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s >= 1:
		return fmt.Sprintf("%.3g s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3g ms", s*1e3)
	case s >= 1e-6:
		return fmt.Sprintf("%.3g µs", s*1e6)
	}
	return fmt.Sprintf("%.3g ns", s*1e9)
}
