//go:build linux

// Command bochsinit is /init of the Bochs guest that scripts/test-avx512-bochs.sh
// boots to run the AVX-512 kernels' tests on an emulated CPU that has
// AVX-512 (this project's CI machines have only AVX2). As PID 1 it mounts
// proc, sysfs, devtmpfs and a tmpfs on /tmp, prints the guest CPU's
// /proc/cpuinfo flags ("BOCHS-FLAGS ..."), runs every /tests/*.test with the
// arguments in the file beside it (<name>.args, one line), and prints
// "BOCHS-RESULT <name> PASS|FAIL" for each and then "BOCHS-DONE fails=N"
// and 16 KiB of padding (so that Bochs's buffered serial file holds the
// result) before it powers the machine off. Its output is the serial
// console.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	for _, m := range []struct{ src, dir, fs string }{
		{"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}, {"devtmpfs", "/dev", "devtmpfs"}, {"tmpfs", "/tmp", "tmpfs"},
	} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			fmt.Println("BOCHS-WARN mkdir", m.dir, err)
		}
		if err := syscall.Mount(m.src, m.dir, m.fs, 0, ""); err != nil {
			fmt.Println("BOCHS-WARN mount", m.dir, err)
		}
	}
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(info), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "flags" {
				fmt.Println("BOCHS-FLAGS", strings.TrimSpace(v))
				break
			}
		}
	}
	fails := 0
	bins, _ := filepath.Glob("/tests/*.test")
	for _, b := range bins {
		args, _ := os.ReadFile(b + ".args")
		name := strings.TrimSuffix(filepath.Base(b), ".test")
		cmd := exec.Command(b, strings.Fields(string(args))...)
		cmd.Stdout, cmd.Stderr, cmd.Dir = os.Stdout, os.Stdout, "/tmp"
		cmd.Env = append(os.Environ(), "HOME=/tmp", "TMPDIR=/tmp")
		fmt.Println("BOCHS-RUN", name, strings.TrimSpace(string(args)))
		res := "PASS"
		if err := cmd.Run(); err != nil {
			res, fails = "FAIL ("+err.Error()+")", fails+1
		}
		fmt.Println("BOCHS-RESULT", name, res)
	}
	if len(bins) == 0 {
		fmt.Println("BOCHS-WARN no /tests/*.test")
		fails++
	}
	fmt.Printf("BOCHS-DONE fails=%d\n", fails)
	// Bochs buffers its serial-port file and drops the buffer when it quits
	// at power-off: push the result out with 16 KiB of padding first.
	pad := strings.Repeat(strings.Repeat(".", 63)+"\n", 256)
	fmt.Print(pad)
	syscall.Sync()
	if err := syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF); err != nil {
		fmt.Println("BOCHS-WARN poweroff:", err)
	}
	select {}
}
