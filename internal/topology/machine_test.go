package topology

import (
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/cpubench/bench/results"
)

func TestMachineFixtures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		want     results.Machine
		features []string // a few that must be present
	}{
		{
			name: epyc,
			want: results.Machine{
				Arch: "amd64", Vendor: "AMD", CPUModel: "AMD EPYC", Family: 25, Model: 17, Stepping: 1,
				Hypervisor: "unknown", LogicalCPUs: 2, ISAs: []string{"go", "avx2"},
				OS: "linux", Kernel: "6.18.44-fc-v595", Governor: "unknown", Boost: "unknown",
				PerfCounters: "unknown", TransparentHugePages: "madvise",
			},
			features: []string{"AVX2", "FMA", "HYPERVISOR", "SHA_NI"},
		},
		{
			name: xeon,
			want: results.Machine{
				Arch: "amd64", Vendor: "Intel", CPUModel: "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz",
				Family: 6, Model: 85, Stepping: 7, LogicalCPUs: 80, ISAs: []string{"go", "avx2", "avx512"},
				BaseHz: 2.5e9, MaxHz: 3.9e9,
				OS: "linux", Kernel: "4.18.0-513.5.1.el8_9.x86_64", Governor: "powersave", Boost: "enabled",
				PerfCounters: "unknown", TransparentHugePages: "always",
			},
			features: []string{"AVX512F", "AVX512_VNNI", "AVX2"},
		},
		{
			name: kunpeng,
			want: results.Machine{
				Arch: "arm64", Vendor: "HiSilicon", CPUModel: "Kunpeng-920 (TaiShan v110)",
				Family: 8, Model: 0xd01, Stepping: 0, LogicalCPUs: 192, ISAs: []string{"go", "neon"},
				MaxHz: 2.6e9,
				OS:    "linux", Kernel: "5.15.0-91-generic", Governor: "performance", Boost: "unknown",
				PerfCounters: "unknown", TransparentHugePages: "madvise",
			},
			features: []string{"ASIMD", "ASIMDDP", "FPHP", "ASIMDHP"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := readMachine(fixture(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.IsSorted(m.Features) {
				t.Errorf("Features not sorted: %v", m.Features)
			}
			for _, f := range tc.features {
				if !slices.Contains(m.Features, f) {
					t.Errorf("Features lack %s: %v", f, m.Features)
				}
			}
			got := *m
			got.Features = nil
			tc.want.GoVersion = runtime.Version()
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("machine =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestMachineMissingFiles(t *testing.T) {
	r := mutable(t, xeon)
	removeAll(t, filepath.Join(r.Proc, "cpuinfo"))
	removeAll(t, filepath.Join(r.Proc, "sys"))
	removeAll(t, filepath.Join(r.Sys, "kernel"))
	removeAll(t, filepath.Join(r.Sys, "devices/system/cpu/cpu0/cpufreq"))
	removeAll(t, filepath.Join(r.Sys, "devices/system/cpu/intel_pstate"))
	m, err := readMachine(r)
	if err != nil {
		t.Fatal(err)
	}
	want := results.Machine{
		Arch: "unknown", Vendor: "unknown", CPUModel: "unknown", LogicalCPUs: 80,
		Features: []string{}, ISAs: []string{"go"}, OS: "linux", Kernel: "unknown", GoVersion: runtime.Version(),
		Governor: "unknown", Boost: "unknown", PerfCounters: "unknown", TransparentHugePages: "unknown",
	}
	if !reflect.DeepEqual(*m, want) {
		t.Errorf("machine =\n%+v\nwant\n%+v", *m, want)
	}
}

func TestMachineBoostAndErrors(t *testing.T) {
	r := mutable(t, xeon)
	noTurbo := filepath.Join(r.Sys, "devices/system/cpu/intel_pstate/no_turbo")
	t.Run("no_turbo=1", func(t *testing.T) {
		write(t, noTurbo, "1")
		if m, err := readMachine(r); err != nil || m.Boost != "disabled" {
			t.Errorf("Boost = %v, %v; want disabled", m, err)
		}
	})
	t.Run("cpufreq/boost=0 wins", func(t *testing.T) {
		write(t, filepath.Join(r.Sys, "devices/system/cpu/cpufreq/boost"), "0")
		if m, err := readMachine(r); err != nil || m.Boost != "disabled" {
			t.Errorf("Boost = %v, %v; want disabled", m, err)
		}
	})
	for _, tc := range []struct{ file, content, want string }{
		{"devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "fast", `parse "fast": invalid syntax`},
		{"devices/system/cpu/intel_pstate/no_turbo", "maybe", `parse "maybe": invalid syntax`},
		{"kernel/mm/transparent_hugepage/enabled", "always madvise never", `parse "always madvise never": no [selected] word`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(r.Sys, tc.file)
			write(t, path, tc.content)
			_, err := readMachine(r)
			if want := "topology: " + path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("error %v, want %s", err, want)
			}
		})
	}
}

func TestArmName(t *testing.T) {
	for _, tc := range []struct {
		impl, part    int
		vendor, model string
	}{
		{0x41, 0xd0c, "ARM", "Neoverse-N1"},
		{0x41, 0xd40, "ARM", "Neoverse-V1"},
		{0x41, 0xd4f, "ARM", "Neoverse-V2"},
		{0x48, 0xd01, "HiSilicon", "Kunpeng-920 (TaiShan v110)"},
		{0x41, 0xfff, "ARM", "ARM part 0xfff"},
		{0x99, 0x001, "implementer 0x99", "implementer 0x99 part 0x001"},
	} {
		if v, m := armName(tc.impl, tc.part); v != tc.vendor || m != tc.model {
			t.Errorf("armName(%#x, %#x) = %q, %q; want %q, %q", tc.impl, tc.part, v, m, tc.vendor, tc.model)
		}
	}
}

func TestBracketed(t *testing.T) {
	for in, want := range map[string]string{
		"always [madvise] never": "madvise", "[always] madvise never": "always", "always": "", "[never": "",
	} {
		if got := bracketed(in); got != want {
			t.Errorf("bracketed(%q) = %q, want %q", in, got, want)
		}
	}
}
