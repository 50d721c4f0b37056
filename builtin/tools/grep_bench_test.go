package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// benchCases are the patterns BenchmarkGrep times, ours against ripgrep.
var benchCases = []struct {
	name, pattern string
	ignoreCase    bool
}{
	{"literal", "ErrBudgetExceeded", false},
	{"ignorecase", "errbudgetexceeded", true},
	{"alternation", "TODO|FIXME|XXX", false},
	{"regex", `func \(\w+ \*?[A-Z]\w*\) Serve\w*\(`, false},
	{"noliteral", `[A-Z][a-z]+[0-9]{4}\b`, false},
}

// BenchmarkGrep searches a generated tree of about 5,000 Go-like files
// (about 60 MB, plus gitignored files) with our grep and with ripgrep
// (rg -n --no-heading) side by side. The rg sub-benchmarks are skipped
// when rg is not on PATH.
//
//	go test -run x -bench Grep -benchtime 20x ./builtin/tools
func BenchmarkGrep(b *testing.B) {
	dir := b.TempDir()
	size := buildBenchTree(b, dir, 5000)
	b.Logf("tree: %d files searched, %.1f MB", 5000, float64(size)/1e6)
	rg, _ := exec.LookPath("rg")
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: dir})
	grep := tools.Grep()

	for _, c := range benchCases {
		args, _ := json.Marshal(map[string]any{"pattern": c.pattern, "ignore_case": c.ignoreCase})
		rgArgs := []string{"-n", "--no-heading"}
		if c.ignoreCase {
			rgArgs = append(rgArgs, "-i")
		}
		rgArgs = append(rgArgs, c.pattern)

		// Both must find the same lines, or the timing means nothing.
		out, err := grep.Call(ctx, args)
		if err != nil {
			b.Fatal(err)
		}
		ours := totalMatches(out)
		if rg != "" {
			theirs := rgCount(b, rg, dir, rgArgs)
			if ours != theirs {
				b.Fatalf("%s: grep found %d lines, rg %d", c.name, ours, theirs)
			}
		}
		b.Run(c.name+"/troupe", func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				if _, err := grep.Call(ctx, args); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(ours), "lines")
		})
		b.Run(c.name+"/rg", func(b *testing.B) {
			if rg == "" {
				b.Skip("rg (ripgrep) is not on PATH")
			}
			b.SetBytes(size)
			for b.Loop() {
				cmd := exec.Command(rg, rgArgs...)
				cmd.Dir = dir
				cmd.Stdout = io.Discard // a pipe: rg takes shortcuts when writing to /dev/null
				var exit *exec.ExitError
				if err := cmd.Run(); err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
					b.Fatal(err) // 1 means no match
				}
			}
		})
	}
}

var moreRE = regexp.MustCompile(`(?m)^\.\.\. (\d+) more matches not shown`)

// totalMatches counts the lines our grep reported, shown or not.
func totalMatches(out string) int {
	if out == "no matches" {
		return 0
	}
	n := strings.Count(out, "\n") + 1
	if m := moreRE.FindStringSubmatch(out); m != nil {
		more, _ := strconv.Atoi(m[1])
		n += more - 1
	}
	return n
}

func rgCount(b *testing.B, rg, dir string, args []string) int {
	cmd := exec.Command(rg, append([]string{"--count"}, args[2:]...)...)
	cmd.Dir = dir
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return 0
	}
	if err != nil {
		b.Fatal(err)
	}
	total := 0
	for line := range strings.Lines(string(out)) {
		_, n, _ := strings.Cut(strings.TrimSpace(line), ":")
		k, _ := strconv.Atoi(n)
		total += k
	}
	return total
}

var benchWords = strings.Fields(`
	reader writer buffer config manager agent budget token model tool call
	result error state event stream client server handler request response
	context cancel timeout deadline worker queue cache index search match
	file path root dir walk open close read write parse format encode decode
	value key name type spec param option flag count size limit offset line
	node tree graph edge list map set slice array string bytes int uint bool
	`)

// buildBenchTree writes n searchable files of Go-like text under dir,
// deterministically, plus a .gitignore, files it ignores, and a .git
// directory (ripgrep honours .gitignore only inside a repository). It
// returns the bytes of the searchable files.
func buildBenchTree(tb testing.TB, dir string, n int) int64 {
	rng := rand.New(rand.NewPCG(1, 2))
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		tb.Fatal(err)
	}
	write(".gitignore", []byte("/vendor/\n*.gen.go\nbuild/\n"))

	ident := func() string {
		a, c := benchWords[rng.IntN(len(benchWords))], benchWords[rng.IntN(len(benchWords))]
		return strings.ToUpper(a[:1]) + a[1:] + strings.ToUpper(c[:1]) + c[1:]
	}
	var total int64
	var buf bytes.Buffer
	file := func(lines int) []byte {
		buf.Reset()
		fmt.Fprintf(&buf, "package %s\n\nimport (\n\t\"context\"\n\t\"fmt\"\n)\n\n", benchWords[rng.IntN(len(benchWords))])
		for buf.Len() < lines*40 {
			switch r := rng.IntN(1000); {
			case r < 2:
				fmt.Fprintf(&buf, "\t\treturn nil, ErrBudgetExceeded // %s\n", ident())
			case r < 3:
				fmt.Fprintf(&buf, "\t// TODO(%s): handle %s\n", benchWords[rng.IntN(len(benchWords))], ident())
			case r < 4:
				fmt.Fprintf(&buf, "func (s *%s) Serve%s(ctx context.Context) error {\n", ident(), ident())
			case r < 60:
				fmt.Fprintf(&buf, "func (%c *%s) %s(ctx context.Context, %s %s) (%s, error) {\n",
					'a'+rng.IntN(26), ident(), ident(), benchWords[rng.IntN(len(benchWords))], ident(), ident())
			case r < 120:
				buf.WriteString("\t}\n")
			case r < 200:
				fmt.Fprintf(&buf, "\tif err != nil {\n\t\treturn fmt.Errorf(\"%s %s: %%w\", err)\n", benchWords[rng.IntN(len(benchWords))], benchWords[rng.IntN(len(benchWords))])
			case r < 260:
				fmt.Fprintf(&buf, "\t// %s %s the %s %s before %s.\n", ident(), benchWords[rng.IntN(len(benchWords))], benchWords[rng.IntN(len(benchWords))], benchWords[rng.IntN(len(benchWords))], ident())
			default:
				fmt.Fprintf(&buf, "\t%s := %s.%s(%s, %d)\n", benchWords[rng.IntN(len(benchWords))], benchWords[rng.IntN(len(benchWords))], ident(), ident(), rng.IntN(10000))
			}
		}
		return buf.Bytes()
	}
	for i := range n {
		rel := fmt.Sprintf("pkg%02d/sub%02d/%s_%d.go", i%50, (i/50)%10, benchWords[i%len(benchWords)], i)
		data := file(100 + rng.IntN(500))
		total += int64(len(data))
		write(rel, data)
	}
	// Ignored: must cost neither tool anything but the walk.
	for i := range 200 {
		write(fmt.Sprintf("vendor/mod%d/x.go", i), file(300))
		write(fmt.Sprintf("pkg%02d/z_%d.gen.go", i%50, i), file(300))
	}
	return total
}
