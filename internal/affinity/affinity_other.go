//go:build !linux

package affinity

import (
	"fmt"
	"runtime"
)

var errOS = fmt.Errorf("affinity: not implemented on %s", runtime.GOOS)

// Pin is implemented only on Linux; here it returns an error naming the CPU and GOOS.
func Pin(cpu int) error { return fmt.Errorf("affinity: pin to CPU %d: %w", cpu, errOS) }

// PinSet is implemented only on Linux; here it returns an error naming the CPUs and GOOS.
func PinSet(cpus []int) error { return fmt.Errorf("affinity: pin to CPUs %v: %w", cpus, errOS) }

// Allowed is implemented only on Linux; here it returns an error naming GOOS.
func Allowed() ([]int, error) { return nil, errOS }

// Current is implemented only on Linux; here it returns -1 and an error naming GOOS.
func Current() (int, error) { return -1, errOS }
