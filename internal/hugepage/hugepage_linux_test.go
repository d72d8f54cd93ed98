package hugepage

import "testing"

// A buffer of Min bytes or more from Make is advised MADV_HUGEPAGE over
// its whole pages where THP allows advice (the hg flag in smaps; whether
// huge pages are then granted depends on free memory and on the first
// touch, and is only logged). Skipped where advice cannot show: THP
// "never", or an emulator (qemu-user ignores madvise).
func TestMakeAdvised(t *testing.T) {
	if !Allowed() {
		t.Skip("transparent huge pages not allowed here")
	}
	ctl := make([]byte, 8<<20)
	Advise(ctl)
	if ok, _, err := Advised(ctl); err != nil || !ok {
		t.Skipf("MADV_HUGEPAGE leaves no hg flag in smaps in this process (%v)", err)
	}
	big := Make[float32](Min) // 8 MiB
	b := bytesOf(big)
	ok, huge, err := Advised(b)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Errorf("Make[float32](%d): not advised MADV_HUGEPAGE (smaps VmFlags without hg)", Min)
	}
	t.Logf("%d of %d bytes on huge pages", huge, len(b))
}

// Advised rejects a buffer without a whole page.
func TestAdvisedTooSmall(t *testing.T) {
	if _, _, err := Advised(make([]byte, 100)); err == nil {
		t.Fatal("Advised of 100 bytes: no error")
	}
}
