package qemutest

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"testing"

	"golang.org/x/sys/unix"
)

// guestMain runs as /init in the guest: it never returns.
func guestMain(m *testing.M) {
	name := os.Getenv(GuestEnv)
	code := 1
	if err := guestMount(); err != nil {
		fmt.Printf("%s %v\n", guestMark, err)
	} else {
		for _, f := range [][2]string{
			{"test.run", "^" + regexp.QuoteMeta(name) + "$"},
			{"test.v", "true"},
			{"test.timeout", guestTimeout().String()},
		} {
			if err := flag.Set(f[0], f[1]); err != nil {
				fmt.Printf("%s -%s=%s: %v\n", guestMark, f[0], f[1], err)
			}
		}
		code = m.Run()
		if code == 0 && !guestRan.Load() {
			fmt.Printf("%s %s did not run (no such test, or skipped before qemutest.RequireGuest)\n", guestMark, name)
			code = 1
		}
	}
	result := "PASS"
	if code != 0 {
		result = "FAIL"
	}
	fmt.Printf("\n%s%s\n", ResultPrefix, result)
	unix.IoctlSetInt(1, unix.TCSBRK, 1) // tcdrain: let the UART send it all
	unix.Sync()
	err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	fmt.Printf("%s power off: %v\n", guestMark, err)
	os.Exit(code) // PID 1 exiting panics the kernel; panic=-1 and -no-reboot end qemu
}

// guestMount mounts proc on /proc and sysfs on /sys.
func guestMount() error {
	for _, m := range []struct{ fstype, dir string }{{"proc", "/proc"}, {"sysfs", "/sys"}} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.fstype, m.dir, m.fstype, 0, ""); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.dir, err)
		}
	}
	return nil
}
