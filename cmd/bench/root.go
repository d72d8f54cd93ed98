package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set with -ldflags "-X main.version=..." by release builds.
var version = "dev"

// IO carries the streams a command reads and writes, so tests can inject them.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// NewRootCmd builds the command tree.
func NewRootCmd(streams IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "bench",
		Short:         "Characterize a CPU for LLM inference and explain where each operator should run",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w (see '%s --help')", c.CommandPath(), err, c.CommandPath())
	})
	for _, add := range subcommands {
		root.AddCommand(add(streams))
	}
	return root
}

// subcommands is filled by each command file's init, so files for new
// commands do not edit this one.
var subcommands []func(IO) *cobra.Command

// Execute runs bench with args and returns the process exit status. Ctrl-C
// cancels the command's context; commands write results atomically, so an
// interrupted run leaves no partial files.
func Execute(args []string, in io.Reader, out, errw io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root := NewRootCmd(IO{In: in, Out: out, Err: errw})
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(errw, "bench: interrupted; no partial results were written")
			return 130
		}
		fmt.Fprintf(errw, "bench: %v\n", err)
		return 1
	}
	return 0
}
