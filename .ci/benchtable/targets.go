package main

import "fmt"

// targets are the performance goals troupe holds itself to, in the order
// docs/benchmarks.md gives them. Each names the benchmark and unit it is
// read from; a comparison with a peer or a floor uses figures of the same
// run, never a figure from another day.
var targets = []target{
	{
		what:   "everything on (budgets, events, transcript, a subscriber), per step",
		target: "≤ 5 µs",
		judge: func(f figures) (string, string, bool, bool) {
			v, ok := f.get("BenchmarkSideBySide", "all-on-µs/step")
			detail := ""
			// Events the subscriber lost cost it nothing; the share it
			// received says how much of its work the step includes.
			if got, ok := f.get("BenchmarkSideBySide", "subscriber-received-%"); ok {
				detail = fmt.Sprintf("the subscriber received %.0f %% of the events", got)
			}
			return fmt.Sprintf("%.2f µs", v), detail, v <= 5, ok
		},
	},
	{
		what:   "everything on, ahead of langchaingo's executor",
		target: "≥ 16×",
		judge: func(f figures) (string, string, bool, bool) {
			ratio, ok1 := f.get("BenchmarkSideBySide", "langchaingo/all-on")
			lc, ok2 := f.get("BenchmarkSideBySide", "langchaingo-µs/step")
			return fmt.Sprintf("%.1f×", ratio), fmt.Sprintf("langchaingo %.1f µs a step", lc), ratio >= 16, ok1 && ok2
		},
	},
	{
		what:   "core step (nothing on)",
		target: "≤ 2.5 µs",
		judge:  atMost("BenchmarkSideBySide", "core-µs/step", 2.5, "µs"),
	},
	{
		what:   "a lone agent's step with the tree's shared budgets, over the same step without them",
		target: "≤ 1.05×, no extra allocation",
		judge: func(f figures) (string, string, bool, bool) {
			ratio, ok1 := f.get("BenchmarkLoneAgentBudgets", "shared/own")
			extra, ok2 := f.get("BenchmarkLoneAgentBudgets", "extra-allocs/step")
			return fmt.Sprintf("%.3f×, %+.0f allocations a step", ratio, extra), "", ratio <= 1.05 && extra <= 0, ok1 && ok2
		},
	},
	startup("troupe version", "version-ms"),
	startup("troupe types list, small repository", "types-list-ms"),
	startup("troupe run explore, small repository", "run-explore-ms"),
	startup("troupe types list, a repository with a trusted plugin", "types-list-plugin-ms"),
	startup("troupe version, built with cgo (a plain go install where a C compiler is found)", "version-cgo-ms"),
	{
		what:   "plugin tool call, round trip, p50",
		target: "≤ 100 µs",
		judge:  besideFloor("BenchmarkBoundary/plugin-tool", 100),
	},
	{
		what:   "out-of-process script hook, p50",
		target: "≤ 120 µs",
		judge:  besideFloor("BenchmarkBoundary/script-hook", 120),
	},
	{
		what:   "Spawn, p99, with 64 agents running",
		target: "< 100 µs",
		judge: func(f figures) (string, string, bool, bool) {
			p99, ok1 := f.get("BenchmarkSpawn", "p99-ns")
			p50, ok2 := f.get("BenchmarkSpawn", "p50-ns")
			return fmt.Sprintf("%.1f µs", p99/1000), fmt.Sprintf("p50 %.1f µs", p50/1000), p99 < 100_000, ok1 && ok2
		},
	},
	{
		what:   "make test (-race), last run on this machine",
		target: "< 5 min",
		judge: func(f figures) (string, string, bool, bool) {
			s, ok := f.get("make test", "s")
			return fmt.Sprintf("%d min %02d s", int(s)/60, int(s)%60), "", s < 300, ok
		},
	},
}

// atMost reads one figure and holds it to a ceiling.
func atMost(bench, unit string, limit float64, show string) func(figures) (string, string, bool, bool) {
	return func(f figures) (string, string, bool, bool) {
		v, ok := f.get(bench, unit)
		return fmt.Sprintf("%.2f %s", v, show), "", v <= limit, ok
	}
}

// startup holds a command's start-up to twice an empty Go program's, plus
// 10 ms, both measured by BenchmarkStartup in the same run.
func startup(what, unit string) target {
	return target{
		what:   what + ", whole command",
		target: "≤ 2 × empty program + 10 ms",
		judge: func(f figures) (string, string, bool, bool) {
			v, ok1 := f.get("BenchmarkStartup", unit)
			empty, ok2 := f.get("BenchmarkStartup", "empty-go-ms")
			limit := 2*empty + 10
			return fmt.Sprintf("%.1f ms", v), fmt.Sprintf("empty Go program %.1f ms (limit %.1f ms)", empty, limit), v <= limit, ok1 && ok2
		},
	}
}

// besideFloor reads a call's p50 beside a bare go-plugin gRPC call of the
// same size in the same run, the floor any process boundary pays.
func besideFloor(bench string, limitMicros float64) func(figures) (string, string, bool, bool) {
	return func(f figures) (string, string, bool, bool) {
		v, ok1 := f.get(bench, "p50-µs")
		floor, ok2 := f.get("BenchmarkBoundary/bare-grpc", "p50-µs")
		return fmt.Sprintf("%.0f µs", v), fmt.Sprintf("bare go-plugin gRPC call %.0f µs", floor), v <= limitMicros, ok1 && ok2
	}
}
