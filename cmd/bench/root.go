package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/cpubench/bench/results"
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

// interrupted is the cause of the command context's cancellation when
// SIGINT or SIGTERM arrives.
type interrupted struct{ sig syscall.Signal }

func (i interrupted) Error() string { return "interrupted by " + signalName(i.sig) }

// signalName is SIGINT or SIGTERM.
func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// onSignalsReady, when set (by tests), is called once the signal handlers
// are installed.
var onSignalsReady func()

// signalContext returns a context cancelled (with cause interrupted) by
// the first SIGINT or SIGTERM. That first signal also restores the
// signals' default action, so a second one kills the process at once.
// stop releases the handler; received reports the signal that arrived,
// if any.
func signalContext() (ctx context.Context, received func() (syscall.Signal, bool), stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	c := make(chan os.Signal, 2)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	var (
		mu  sync.Mutex
		got syscall.Signal
		ok  bool
	)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case s := <-c:
			// Default action from now on: the next signal kills.
			signal.Stop(c)
			sig := s.(syscall.Signal)
			mu.Lock()
			got, ok = sig, true
			mu.Unlock()
			cancel(interrupted{sig})
			// A second signal that arrived before Stop is in c: act on
			// it as its default action would.
			select {
			case s2 := <-c:
				_ = syscall.Kill(os.Getpid(), s2.(syscall.Signal))
			default:
			}
		case <-done:
		}
	}()
	received = func() (syscall.Signal, bool) {
		mu.Lock()
		defer mu.Unlock()
		return got, ok
	}
	stop = func() {
		signal.Stop(c)
		close(done)
		<-exited
		cancel(nil)
	}
	return ctx, received, stop
}

// stickyWriter passes writes to w until one fails; it then keeps that
// error, returns it from every later write, and Execute reports it, so a
// command whose output could not be written (a full disk, /dev/full, a
// closed pipe) does not exit 0.
type stickyWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	s.err = err
	return n, err
}

func (s *stickyWriter) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Execute runs bench with args and returns the process exit status: 0, 1
// for an error (one line on errw), or 128 + the signal number (130 for
// SIGINT, 143 for SIGTERM) when the command stopped because of a signal.
// The first SIGINT or SIGTERM cancels the command's context, which every
// command passes down to its loops, readers and writers; commands write
// results atomically (a temporary file renamed), so an interrupted run
// leaves no partial files. A second signal kills the process at once. A
// failed write to out (e.g. a full disk) makes the exit status 1 even if
// the command returned no error.
func Execute(args []string, in io.Reader, out, errw io.Writer) int {
	ctx, received, stop := signalContext()
	defer stop()
	if onSignalsReady != nil {
		onSignalsReady()
	}
	sout := &stickyWriter{w: out}
	root := NewRootCmd(IO{In: in, Out: sout, Err: errw})
	root.SetArgs(jsonPathArgs(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	prefix := "bench" // "bench probe" for a subcommand
	if cmd != nil {
		prefix = cmd.CommandPath()
	}
	if err == nil {
		if werr := sout.failed(); werr != nil {
			err = fmt.Errorf("write stdout: %w", results.UnwrapPath(werr))
		}
	}
	if err == nil {
		return 0
	}
	if sig, ok := received(); ok {
		fmt.Fprintf(errw, "%s: interrupted by %s; no partial results were written\n", prefix, signalName(sig))
		return 128 + int(sig)
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(errw, "%s: interrupted; no partial results were written\n", prefix)
		return 130
	}
	fmt.Fprintln(errw, errorLine(cmd, err))
	return 1
}

// errorLine is err as the one line bench prints: "bench <cmd>: message",
// the command named once however many times the error chain had put
// "<cmd>: " or "bench <cmd>: " in front of its message.
func errorLine(cmd *cobra.Command, err error) string {
	msg := err.Error()
	if cmd == nil || !cmd.HasParent() {
		return "bench: " + strings.TrimPrefix(msg, "bench: ")
	}
	path := cmd.CommandPath()
	for {
		m := strings.TrimPrefix(msg, path+": ")
		m = strings.TrimPrefix(m, cmd.Name()+": ")
		if m == msg {
			break
		}
		msg = m
	}
	return path + ": " + msg
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
