// Command bench characterizes CPUs for LLM inference. See README.md.
package main

import "os"

func main() { os.Exit(Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
