package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `goos: linux
cpu: Test CPU
BenchmarkSideBySide-2   1   100 ns/op   2.0 core-µs/step   4.0 all-on-µs/step   80.0 langchaingo-µs/step   20.0 langchaingo/all-on   80.0 subscriber-received-%
BenchmarkSideBySide-2   1   100 ns/op   3.0 core-µs/step   9.0 all-on-µs/step   90.0 langchaingo-µs/step   10.0 langchaingo/all-on   40.0 subscriber-received-%
BenchmarkSideBySide-2   1   100 ns/op   2.2 core-µs/step   4.5 all-on-µs/step   85.0 langchaingo-µs/step   18.9 langchaingo/all-on   55.0 subscriber-received-%
BenchmarkSpawn-2     2000    5000 ns/op   2100 p50-ns   150000 p99-ns
PASS
`

func table(t *testing.T, input string, args ...string) (string, int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(file, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(append(args, file), &stdout, &stderr)
	return stdout.String() + stderr.String(), code
}

func row(t *testing.T, out, what string) string {
	t.Helper()
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "| "+what+" |") {
			return line
		}
	}
	t.Fatalf("no row %q in\n%s", what, out)
	return ""
}

func TestRepeatedFiguresCountByTheirMedian(t *testing.T) {
	out, _ := table(t, sample)
	if got := row(t, out, "everything on (budgets, events, transcript, a subscriber), per step"); !strings.Contains(got, "| 4.50 µs |") || !strings.HasSuffix(got, "| yes |\n") {
		t.Errorf("the median of 4.0, 9.0 and 4.5 is 4.5, within 5 µs: %s", got)
	}
	if got := row(t, out, "everything on (budgets, events, transcript, a subscriber), per step"); !strings.Contains(got, "the subscriber received 55 % of the events") {
		t.Errorf("the median share the subscriber received, 55 %%, beside the step: %s", got)
	}
	if got := row(t, out, "core step (nothing on)"); !strings.Contains(got, "| 2.20 µs |") {
		t.Errorf("core step: %s", got)
	}
}

func TestAMissedTargetSaysNo(t *testing.T) {
	out, _ := table(t, sample)
	got := row(t, out, "Spawn, p99, with 64 agents running")
	if !strings.Contains(got, "150.0 µs") || !strings.Contains(got, "p50 2.1 µs") || !strings.HasSuffix(got, "| **no** |\n") {
		t.Errorf("a p99 of 150 µs misses < 100 µs: %s", got)
	}
	if got := row(t, out, "everything on, ahead of langchaingo's executor"); !strings.Contains(got, "18.9×") || !strings.Contains(got, "langchaingo 85.0 µs") {
		t.Errorf("ratio row: %s", got)
	}
}

func TestAFigureNotMeasuredIsSaidSoAndFailsStrict(t *testing.T) {
	out, code := table(t, sample)
	if code != 0 {
		t.Errorf("without -strict the table exits 0, got %d", code)
	}
	if got := row(t, out, "troupe version, whole command"); !strings.Contains(got, "not measured in this run") {
		t.Errorf("start-up did not run: %s", got)
	}
	if _, code := table(t, sample, "-strict"); code != 1 {
		t.Errorf("-strict exits 1 when a target is missed or not measured, got %d", code)
	}
}

func TestTheMachineIsNamed(t *testing.T) {
	out, _ := table(t, sample)
	if !strings.HasPrefix(out, "cpu: Test CPU\n") {
		t.Errorf("the table starts with the machine: %q", out)
	}
}

func TestMakeTestTimeIsRead(t *testing.T) {
	secs := filepath.Join(t.TempDir(), "secs")
	if err := os.WriteFile(secs, []byte("212\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := table(t, sample, "-test-seconds", secs)
	if got := row(t, out, "make test (-race), last run on this machine"); !strings.Contains(got, "3 min 32 s") || !strings.HasSuffix(got, "| yes |\n") {
		t.Errorf("make test row: %s", got)
	}
}

func TestStartupIsHeldToTheEmptyProgramOfTheSameRun(t *testing.T) {
	in := "BenchmarkStartup-2 1 1 ns/op 3.0 empty-go-ms 15.0 version-ms 17.0 types-list-ms\n"
	out, _ := table(t, in)
	if got := row(t, out, "troupe version, whole command"); !strings.HasSuffix(got, "| yes |\n") || !strings.Contains(got, "limit 16.0 ms") {
		t.Errorf("15 ms is within 2 × 3 + 10: %s", got)
	}
	if got := row(t, out, "troupe types list, small repository, whole command"); !strings.HasSuffix(got, "| **no** |\n") {
		t.Errorf("17 ms is over 2 × 3 + 10: %s", got)
	}
}
