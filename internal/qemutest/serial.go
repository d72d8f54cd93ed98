package qemutest

import "strings"

// ResultPrefix starts the line the guest prints last: ResultPrefix + "PASS"
// or ResultPrefix + "FAIL".
const ResultPrefix = "BENCH_QEMU_RESULT="

// guestMark is the prefix of the guest harness's own messages.
const guestMark = "guest:"

// serialParser follows the guest's serial console line by line.
type serialParser struct {
	started bool
	// result is "PASS", "FAIL" or, before the result line, "".
	result string
	// log holds the guest's test output: the non-empty lines from the first
	// "=== RUN" or "guest:" on, without the result line.
	log []string
}

// line takes one line of serial output (with or without its "\r") and
// reports whether it was the result line. It returns the line to show if it
// belongs to the guest's log, else "".
func (p *serialParser) line(l string) (show string, done bool) {
	l = strings.TrimRight(l, "\r")
	if res, ok := strings.CutPrefix(l, ResultPrefix); ok {
		p.result = res
		return "", true
	}
	if !p.started {
		// The first line follows the console's reset escape sequences.
		for _, mark := range []string{"=== RUN", guestMark} {
			if i := strings.Index(l, mark); i >= 0 {
				l, p.started = l[i:], true
				break
			}
		}
	}
	if !p.started || l == "" {
		return "", false
	}
	p.log = append(p.log, l)
	return l, false
}
