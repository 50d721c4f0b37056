//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkStartup runs the built command as a user does and reports, for
// each case, the median wall time and the median count of minor page
// faults (pages the process touched for the first time: its share of the
// binary, its heap, its stacks) over a series of runs:
//
//   - empty-go: an empty Go program, which is what starting any process
//     costs on the machine, so that troupe's own share can be read off;
//   - version: `troupe version`, start-up and nothing else;
//   - types-list: `troupe types list` on a small repository without
//     plugins (registry, definitions, config, trust);
//   - run-explore: a whole `troupe run explore` there (model choice and
//     the offline model's few milliseconds besides);
//   - types-list-plugin: `types list` in a copy of that repository with
//     one plugin of its own, which the user trusted: checking that trust
//     and describing the plugin from the cache, without starting it;
//   - version-cgo: `troupe version` built with cgo, as a plain go build
//     makes it where a C compiler is found: linked against the C library,
//     which the loader maps and resolves at every start.
//
// troupe is built as make build and the README's install build it
// (CGO_ENABLED=0: a static binary, as the empty program is).
//
// Target: every troupe case within twice empty-go plus 10 ms, both of
// the same run (make bench's table holds each to it); a user should not
// notice start-up.
func BenchmarkStartup(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "troupe")
	goBuild(b, bin, ".", "CGO_ENABLED=0")
	withCgo := filepath.Join(b.TempDir(), "troupe-cgo")
	goBuild(b, withCgo, ".", "CGO_ENABLED=1")
	empty := filepath.Join(b.TempDir(), "empty")
	src := filepath.Join(b.TempDir(), "empty.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	goBuild(b, empty, src, "CGO_ENABLED=0")
	home := b.TempDir()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_STATE_HOME="+home, "XDG_DATA_HOME="+home,
		"XDG_CACHE_HOME="+home, "TROUPE_MODEL=offline", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "TROUPE_PLUGIN_PATH=")
	withPlugin := trustedPluginRepo(b, bin, env, filepath.Join(home, "troupe", "digests"))

	cases := []struct {
		name string
		bin  string
		args []string
	}{
		{"empty-go", empty, nil},
		{"version", bin, []string{"version"}},
		{"types-list", bin, []string{"types", "list", "--repo", shop}},
		{"run-explore", bin, []string{"run", "explore", "--repo", shop, "--progress", "none", "ChargeWithRetry"}},
		{"types-list-plugin", bin, []string{"types", "list", "--repo", withPlugin}},
		{"version-cgo", withCgo, []string{"version"}},
	}
	for range b.N {
		for _, c := range cases {
			wall, faults := startupMedians(b, env, c.bin, c.args...)
			b.ReportMetric(float64(wall)/float64(time.Millisecond), c.name+"-ms")
			b.ReportMetric(faults, c.name+"-faults")
		}
	}
}

func goBuild(b *testing.B, out, pkg string, env ...string) {
	b.Helper()
	build := goCommand("build", "-o", out, pkg)
	build.Env = append(build.Env, env...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatal(err)
	}
}

// trustedPluginRepo copies the small repository into a project of its
// own, puts the todos example plugin in its .troupe/plugins, trusts it
// as a user does (troupe trust, with no terminal to ask at) and lists
// its types, which describes the plugin into the cache, until troupe has
// remembered the binary's checksum in digests: a binary is remembered
// only once it is a few seconds old (see process.Digests), and a user's
// plugins are older than that.
func trustedPluginRepo(b *testing.B, bin string, env []string, digests string) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.CopyFS(dir, os.DirFS(shop)); err != nil {
		b.Fatal(err)
	}
	plugins := filepath.Join(dir, ".troupe", "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		b.Fatal(err)
	}
	goBuild(b, filepath.Join(plugins, "troupe-plugin-todos"), "../../examples/plugins/todos")
	troupe := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("troupe %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	troupe("trust", "--repo", dir)
	for deadline := time.Now().Add(time.Minute); ; {
		if out := troupe("types", "list", "--repo", dir); !strings.Contains(out, "plugin:todos") {
			b.Fatalf("the trusted plugin's types are not listed:\n%s", out)
		}
		if memos, _ := filepath.Glob(filepath.Join(digests, "*.json")); len(memos) > 0 {
			return dir
		}
		if time.Now().After(deadline) {
			b.Fatalf("troupe did not remember the plugin's checksum in %s", digests)
		}
	}
}

// startupMedians runs bin with args a number of times and returns the
// median wall time and median count of minor page faults.
func startupMedians(b *testing.B, env []string, bin string, args ...string) (time.Duration, float64) {
	b.Helper()
	const runs = 15
	times := make([]time.Duration, 0, runs)
	faults := make([]int64, 0, runs)
	for range runs {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
		}
		times = append(times, time.Since(start))
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			faults = append(faults, int64(ru.Minflt))
		}
	}
	slices.Sort(times)
	slices.Sort(faults)
	if len(faults) == 0 {
		return times[runs/2], 0
	}
	return times[runs/2], float64(faults[len(faults)/2])
}
