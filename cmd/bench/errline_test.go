package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestErrorLine: an error is one line, "bench <cmd>: message", the command
// named once (it was "bench: bench probe: unknown flag").
func TestErrorLine(t *testing.T) {
	root := NewRootCmd(IO{})
	n := 0
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		n++
		code, _, errs := run(t, c.Name(), "--no-such-flag")
		want := fmt.Sprintf("bench %[1]s: unknown flag: --no-such-flag (see 'bench %[1]s --help')\n", c.Name())
		if code != 1 || errs != want {
			t.Errorf("bench %s --no-such-flag: exit %d, stderr %q, want %q", c.Name(), code, errs, want)
		}
	}
	if n < 8 {
		t.Errorf("only %d commands", n)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "--threads", "1", "--profile", "none", "--cell", "99"}, "bench sweep: --cell 99: the grid has "},
		{[]string{"roofline", "--profile", "m4-pro", "--model", "nosuch"}, "bench roofline: "},
		{[]string{"nosuch"}, `bench: unknown command "nosuch" for "bench"`},
	} {
		code, _, errs := run(t, c.args...)
		if code != 1 || !strings.HasPrefix(errs, c.want) || strings.Count(errs, "\n") != 1 || strings.Count(errs, "bench") != 1+strings.Count(c.want, `"bench"`) {
			t.Errorf("bench %v: exit %d, stderr %q, want one line starting %q, bench named once", c.args, code, errs, c.want)
		}
	}
	sweep, _, err := root.Find([]string{"sweep"})
	if err != nil {
		t.Fatal(err)
	}
	for msg, want := range map[string]string{
		"sweep: --cell 3: bad":             "bench sweep: --cell 3: bad",
		"sweep: sweep: bad":                "bench sweep: bad",
		"bench sweep: bad":                 "bench sweep: bad",
		"results: sweep.lock: held by 123": "bench sweep: results: sweep.lock: held by 123",
	} {
		if got := errorLine(sweep, errors.New(msg)); got != want {
			t.Errorf("errorLine(sweep, %q) = %q, want %q", msg, got, want)
		}
	}
	if got := errorLine(root, errors.New("bench: x")); got != "bench: x" {
		t.Errorf("errorLine(root, %q) = %q", "bench: x", got)
	}
}
