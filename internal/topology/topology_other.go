//go:build !linux

package topology

import (
	"fmt"
	"runtime"

	"github.com/cpubench/bench/results"
)

// ReadTopology is implemented on Linux only; here it returns the error
// "topology: not implemented on <GOOS>".
func ReadTopology(Roots) (*results.Topology, error) { return nil, errNotImplemented() }

// ReadMachine is implemented on Linux only; here it returns the error
// "topology: not implemented on <GOOS>".
func ReadMachine(Roots) (*results.Machine, error) { return nil, errNotImplemented() }

func errNotImplemented() error {
	return fmt.Errorf("topology: not implemented on %s", runtime.GOOS)
}
