package qemutest

import (
	"slices"
	"strings"
	"testing"
)

func TestSerialParser(t *testing.T) {
	console := "\x1bc\x1b[?7l\x1b[2J\x1b[0m=== RUN   TestQEMUGuest\r\n" +
		"    qemu_test.go:10: pages per node map[1:64]\r\n" +
		"\r\n" +
		"--- PASS: TestQEMUGuest (3.10s)\r\n" +
		"PASS\r\n" +
		"\r\n" +
		ResultPrefix + "PASS\r\n" +
		"[    9.1] reboot: Power down\r\n"
	var p serialParser
	var shown []string
	lines := strings.Split(console, "\n")
	for i, l := range lines {
		s, done := p.line(l)
		if s != "" {
			shown = append(shown, s)
		}
		if done != (i == len(lines)-3) {
			t.Fatalf("line %d %q: done = %v", i, l, done)
		}
		if done {
			break
		}
	}
	want := []string{
		"=== RUN   TestQEMUGuest",
		"    qemu_test.go:10: pages per node map[1:64]",
		"--- PASS: TestQEMUGuest (3.10s)",
		"PASS",
	}
	if p.result != "PASS" || !slices.Equal(p.log, want) || !slices.Equal(shown, want) {
		t.Errorf("result %q, log %q, shown %q; want PASS and %q", p.result, p.log, shown, want)
	}
}

func TestSerialParserHarnessError(t *testing.T) {
	var p serialParser
	for _, l := range []string{"[    1.0] Run /init as init process\r", "\x1b[0mguest: mount proc on /proc: EPERM\r", "", ResultPrefix + "FAIL\r"} {
		p.line(l)
	}
	if p.result != "FAIL" || !slices.Equal(p.log, []string{"guest: mount proc on /proc: EPERM"}) {
		t.Errorf("result %q, log %q", p.result, p.log)
	}
}
