package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The encoders agree with GNU as (binutils >= 2.38 knows AMX, AVX512_BF16,
// AVX512_FP16 and AVX-VNNI). Skipped where as is not installed.
func TestEncodingsMatchGNUAs(t *testing.T) {
	as, err := exec.LookPath("as")
	if err != nil {
		t.Skip("GNU as not installed")
	}
	cases := []struct {
		intel string
		got   []byte
	}{
		{"vdpbf16ps zmm0, zmm30, zmm31", encVDPBF16PS(0, 30, 31)},
		{"vdpbf16ps zmm23, zmm30, zmm31", encVDPBF16PS(23, 30, 31)},
		{"vdpbf16ps zmm9, zmm17, zmm2", encVDPBF16PS(9, 17, 2)},
		{"vfmadd231ph zmm0, zmm30, zmm31", encVFMADD231PH(0, 30, 31)},
		{"vfmadd231ph zmm11, zmm3, zmm12", encVFMADD231PH(11, 3, 12)},
		{"vpdpbusd zmm0, zmm30, zmm31", encVPDPBUSDzmm(0, 30, 31)},
		{"vpdpbusd zmm16, zmm8, zmm7", encVPDPBUSDzmm(16, 8, 7)},
		{"{vex} vpdpbusd ymm0, ymm14, ymm15", encVPDPBUSDymmVEX(0, 14, 15)},
		{"{vex} vpdpbusd ymm9, ymm14, ymm15", encVPDPBUSDymmVEX(9, 14, 15)},
		{"{vex} vpdpbusd ymm1, ymm2, ymm3", encVPDPBUSDymmVEX(1, 2, 3)},
		{"tdpbf16ps tmm0, tmm4, tmm6", encTDPBF16PS(0, 4, 6)},
		{"tdpbf16ps tmm3, tmm5, tmm7", encTDPBF16PS(3, 5, 7)},
		{"tdpbusd tmm1, tmm4, tmm7", encTDPBUSD(1, 4, 7)},
		{"tdpbusd tmm2, tmm5, tmm6", encTDPBUSD(2, 5, 6)},
		{"ldtilecfg [rsi]", encLDTILECFGrsi()},
		{"tilerelease", encTILERELEASE()},
		{"tileloadd tmm5, [rsi+rdx*1]", encTILELOADD(5)},
		{"tilestored [rsi+rdx*1], tmm2", encTILESTORED(2)},
	}
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString(".intel_syntax noprefix\n")
	for _, c := range cases {
		fmt.Fprintf(&src, "%s\n", c.intel)
	}
	in, obj := filepath.Join(dir, "x.s"), filepath.Join(dir, "x.o")
	if err := os.WriteFile(in, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "--64", "-o", obj, in).CombinedOutput(); err != nil {
		t.Skipf("as cannot assemble the test instructions (too old?): %v\n%s", err, out)
	}
	out, err := exec.Command("objdump", "-d", "-M", "intel", obj).Output()
	if err != nil {
		t.Skipf("objdump: %v", err)
	}
	// Lines look like "   0:	62 62 2e 48 52 c7    	vdpbf16ps ...".
	re := regexp.MustCompile(`^\s*[0-9a-f]+:\t((?:[0-9a-f]{2} )+)\s*\t`)
	var want [][]byte
	for _, l := range strings.Split(string(out), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var b []byte
		for _, h := range strings.Fields(m[1]) {
			var x byte
			fmt.Sscanf(h, "%02x", &x)
			b = append(b, x)
		}
		want = append(want, b)
	}
	if len(want) != len(cases) {
		t.Fatalf("objdump gave %d instructions, want %d:\n%s", len(want), len(cases), out)
	}
	for i, c := range cases {
		if !bytes.Equal(c.got, want[i]) {
			t.Errorf("%s: encoded % x, GNU as % x", c.intel, c.got, want[i])
		}
	}
}
