// Command benchtable reads the output of `go test -bench` and prints
// troupe's performance targets as one Markdown table: each target, this
// run's figure, what was measured beside it in the same run (the peer or
// the floor it is judged against) and whether it is met. A figure that a
// benchmark reported several times (-count) counts by its median.
//
//	go test -run '^$' -bench . ./... | tee out; go run ./.ci/benchtable [-test-seconds FILE] out
//
// The targets live in targets.go. A target whose benchmark did not run
// says so; -strict makes that, or a missed target, exit 1.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("benchtable", flag.ContinueOnError)
	fl.SetOutput(stderr)
	testSeconds := fl.String("test-seconds", "", "a file holding the wall seconds of the last `make test`")
	strict := fl.Bool("strict", false, "exit 1 when a target is missed or was not measured")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	figs := figures{}
	for _, name := range fl.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "benchtable: %v\n", err)
			return 2
		}
		err = figs.read(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "benchtable: %s: %v\n", name, err)
			return 2
		}
	}
	if fl.NArg() == 0 {
		if err := figs.read(os.Stdin); err != nil {
			fmt.Fprintf(stderr, "benchtable: standard input: %v\n", err)
			return 2
		}
	}
	if *testSeconds != "" {
		if err := figs.readTestSeconds(*testSeconds); err != nil {
			fmt.Fprintf(stderr, "benchtable: %v\n", err)
		}
	}
	missed := figs.print(stdout, targets)
	if *strict && missed > 0 {
		fmt.Fprintf(stderr, "benchtable: %d targets missed or not measured\n", missed)
		return 1
	}
	return 0
}

// figures holds every value a benchmark line reported, keyed by the
// benchmark's name (without the -GOMAXPROCS suffix) and the unit.
type figures struct {
	values map[string][]float64
	cpu    string
}

func key(bench, unit string) string { return bench + " " + unit }

var procsSuffix = regexp.MustCompile(`-\d+$`)

// read takes the lines of `go test -bench` output: "BenchmarkName-N
// iterations value unit [value unit]...". Other lines are ignored, but for
// the cpu: line, which names the machine.
func (f *figures) read(r io.Reader) error {
	if f.values == nil {
		f.values = map[string][]float64{}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if cpu, ok := strings.CutPrefix(line, "cpu: "); ok && f.cpu == "" {
			f.cpu = strings.TrimSpace(cpu)
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name := procsSuffix.ReplaceAllString(fields[0], "")
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				break
			}
			k := key(name, fields[i+1])
			f.values[k] = append(f.values[k], v)
		}
	}
	return sc.Err()
}

// readTestSeconds records the wall time of the last `make test`, which
// make test writes and make bench does not rerun (it takes minutes).
func (f *figures) readTestSeconds(name string) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("no make test time: %w (run make test first to have it in the table)", err)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		return fmt.Errorf("%s: want a number of seconds: %w", name, err)
	}
	if f.values == nil {
		f.values = map[string][]float64{}
	}
	f.values[key("make test", "s")] = []float64{v}
	return nil
}

// get returns the median of the values reported for bench and unit.
func (f figures) get(bench, unit string) (float64, bool) {
	vs := f.values[key(bench, unit)]
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

// A target is one row: judge reads the figures it needs and says what this
// run measured, what stood beside it, and whether the target holds; ok is
// false when a figure it needs is missing.
type target struct {
	what   string
	target string
	judge  func(f figures) (this, beside string, met, ok bool)
}

func (f figures) print(w io.Writer, ts []target) (missed int) {
	if f.cpu != "" {
		fmt.Fprintf(w, "cpu: %s\n\n", f.cpu)
	}
	fmt.Fprintln(w, "| what | target | this run | beside it, same run | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, t := range ts {
		this, beside, met, ok := t.judge(f)
		verdict := "yes"
		switch {
		case !ok:
			this, beside, verdict = "not measured in this run", "", "—"
			missed++
		case !met:
			verdict = "**no**"
			missed++
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", t.what, t.target, this, beside, verdict)
	}
	return missed
}
