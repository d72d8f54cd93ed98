// Command bench characterizes CPUs for LLM inference. See README.md.
package main

import (
	"os"

	"github.com/cpubench/bench/internal/memlimit"
)

func main() {
	// Under a cgroup or rlimit memory limit, the garbage collector keeps
	// the heap below it rather than the kernel killing the process.
	memlimit.SetGoLimit()
	os.Exit(Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
