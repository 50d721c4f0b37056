package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkStartup runs the built command as a user does and reports the
// median wall time of a whole `troupe run explore` on a small repository
// (start-up, registry, config, discovery, model choice, and the agent's
// few milliseconds) and of `troupe types list`; and, side by side, of an
// empty Go program, which is what starting any process costs on the
// machine, so that troupe's own share can be read off.
func BenchmarkStartup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "troupe")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatal(err)
	}
	empty := filepath.Join(b.TempDir(), "empty")
	src := filepath.Join(b.TempDir(), "empty.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	build = exec.Command("go", "build", "-o", empty, src)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_STATE_HOME="+home, "XDG_DATA_HOME="+home,
		"TROUPE_MODEL=offline", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	median := func(bin string, args ...string) time.Duration {
		const runs = 15
		times := make([]time.Duration, 0, runs)
		for range runs {
			cmd := exec.Command(bin, args...)
			cmd.Env = env
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("troupe %v: %v\n%s", args, err, out)
			}
			times = append(times, time.Since(start))
		}
		slices.Sort(times)
		return times[runs/2]
	}
	for range b.N {
		base := median(empty)
		run := median(bin, "run", "explore", "--repo", shop, "--progress", "none", "ChargeWithRetry")
		list := median(bin, "types", "list", "--repo", shop)
		b.ReportMetric(float64(run.Microseconds())/1000, "run-explore-ms")
		b.ReportMetric(float64(list.Microseconds())/1000, "types-list-ms")
		b.ReportMetric(float64(base.Microseconds())/1000, "empty-go-ms")
	}
}
