package qemutest

import (
	"slices"
	"strings"
	"testing"
)

func TestMachineArgs(t *testing.T) {
	two := strings.Join(MachineArgs(2), " ")
	want := "-accel tcg -cpu max -smp 2 -m 1024M -object memory-backend-ram,id=m0,size=512M -object memory-backend-ram,id=m1,size=512M " +
		"-numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1,memdev=m1 -numa dist,src=0,dst=1,val=20 -nic none -nographic -no-reboot"
	if two != want {
		t.Errorf("MachineArgs(2) =\n%s\nwant\n%s", two, want)
	}
	four := MachineArgs(4)
	for _, a := range []string{"-smp", "4", "memory-backend-ram,id=m3,size=256M", "node,nodeid=3,cpus=3,memdev=m3", "dist,src=0,dst=3,val=20", "dist,src=2,dst=3,val=20"} {
		if !slices.Contains(four, a) {
			t.Errorf("MachineArgs(4) lacks %q: %v", a, four)
		}
	}
	if n := strings.Count(strings.Join(four, " "), "dist,"); n != 6 {
		t.Errorf("MachineArgs(4): %d distances, want 6 pairs", n)
	}
}
