package manager_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/manager"
	"github.com/troupe-dev/troupe/manager/scripted"
)

// sbsModel asks for two tool calls on each of three turns, then answers.
// Each turn says something of its own: langchaingo's executor tells turns
// apart by their text.
func sbsModel() *scripted.Model {
	turn := func(text string) scripted.Step {
		return scripted.Step{Text: text, Calls: []scripted.Call{{Name: "noop"}, {Name: "noop"}}}
	}
	return scripted.New(turn("one"), turn("two"), turn("three"), scripted.Step{Text: "done"}).WithoutRecording()
}

// The side-by-side workload: 2,000 agents, each 3 turns of 2 tool calls
// and a final answer (4 model calls), 100 at once, on a zero-latency
// scripted model. A step is one model call and the tool calls it asks for.
const (
	sbsAgents      = 2_000
	sbsConcurrency = 100
	sbsSteps       = 4
)

// BenchmarkSideBySide runs the same workload, in the same run, through
// troupe's manager with nothing on, through troupe with what `troupe run`
// always has on (budgets, an event subscriber reading with
// Subscription.Events, transcripts), the same
// without transcripts, and through langchaingo's agents.Executor, and
// reports microseconds per step and the ratios. Each iteration runs the
// four sbsRounds times, one after the other, and reports the medians:
// one round of each is at the mercy of whatever else the machine does
// that second (langchaingo's figure moved by a third between runs of a
// single round on the 2-core VM of docs/benchmarks.md).
//
// Each measured round comes right after an unmeasured round of the same
// side (settled), as testing.B's own first run is a warm-up: a round run
// right after another side's measured the passage from that side's heap
// to its own (the collector's pace, the pools' contents) as much as the
// code. Measured that way, the everything-on step read 5.6–6.0 µs and
// the core's 2.8, where each after itself read 4.8 and 2.2–2.3 µs, run
// after run (docs/benchmarks.md).
//
// It also reports the share of the everything-on round's events its
// subscriber received. The rest it was told it lost (EventDropped): with
// a hundred agents that never wait on two cores, the scheduler runs a
// woken reader only after the agents ahead of it, and the ring, which
// never holds an agent up, wraps meanwhile. The figure says how much of
// the subscriber's work the step's time includes.
func BenchmarkSideBySide(b *testing.B) {
	for range b.N {
		var core, all, lc, ratio, transcripts, received []float64
		for range sbsRounds {
			c := settled(func() sbsRound { return sbsTroupe(b, false) })
			n := settled(func() sbsRound { return sbsTroupeWith(b, sbsOptions{budgets: true, subscriber: true}) })
			a := settled(func() sbsRound { return sbsTroupe(b, true) })
			l := settled(func() float64 { return sbsLangchaingo(b) })
			core, all, lc = append(core, c.perStep), append(all, a.perStep), append(lc, l)
			ratio, transcripts = append(ratio, l/a.perStep), append(transcripts, a.perStep/n.perStep)
			received = append(received, 100*float64(a.received)/float64(a.received+a.lost))
		}
		b.ReportMetric(median(core), "core-µs/step")
		b.ReportMetric(median(all), "all-on-µs/step")
		b.ReportMetric(median(lc), "langchaingo-µs/step")
		b.ReportMetric(median(ratio), "langchaingo/all-on")
		b.ReportMetric(median(transcripts), "transcripts-on/off")
		b.ReportMetric(median(received), "subscriber-received-%")
	}
}

// sbsRounds is how many times each iteration of BenchmarkSideBySide runs
// each side.
const sbsRounds = 5

// settled runs round twice and returns what the second measured.
func settled[T any](round func() T) T {
	round()
	return round()
}

// median is the middle of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

type sbsOptions struct {
	budgets, subscriber, transcripts bool
	// tracer and meter, when set, are the manager's telemetry providers.
	tracer trace.TracerProvider
	meter  metric.MeterProvider
}

// sbsRound is one round of troupe's side: microseconds a step, and the
// events its subscriber (if any) received and was told it lost.
type sbsRound struct {
	perStep        float64
	received, lost int
}

func sbsTroupe(b *testing.B, everything bool) sbsRound {
	return sbsTroupeWith(b, sbsOptions{budgets: everything, subscriber: everything, transcripts: everything})
}

func sbsTroupeWith(b *testing.B, o sbsOptions) sbsRound {
	b.Helper()
	reg := agenttypes.NewRegistry()
	_ = reg.RegisterTool(&agenttypes.ToolFunc{
		ToolSpec: agenttypes.ToolSpec{Name: "noop", Description: "does nothing", ReadOnly: true},
		Func:     func(context.Context, json.RawMessage) (string, error) { return "ok", nil },
	})
	_ = reg.RegisterType(agenttypes.Type{Name: "bench", Description: "benchmarks", Prompt: "system", Tools: []string{"noop"}})
	model := sbsModel()
	cfg := manager.Config{
		Registry:       reg,
		Models:         manager.ModelResolverFunc(func(context.Context, string) (llms.Model, error) { return model, nil }),
		DefaultModel:   "scripted",
		MaxConcurrent:  sbsConcurrency,
		MaxQueue:       sbsAgents,
		Logger:         slog.New(slog.DiscardHandler),
		TracerProvider: o.tracer,
		MeterProvider:  o.meter,
	}
	var budget agenttypes.Budget
	if o.transcripts {
		cfg.TranscriptDir = b.TempDir()
	}
	if o.budgets {
		budget = agenttypes.Budget{MaxTokens: 1_000_000, MaxTime: time.Hour, MaxToolCalls: 1000, MaxTurns: 100}
	}
	mgr, err := manager.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var drained sync.WaitGroup
	var round sbsRound
	if o.subscriber {
		sub := mgr.Subscribe()
		drained.Go(func() {
			for e := range sub.Events() {
				if e.Kind == manager.EventDropped {
					round.lost += e.Dropped
				} else {
					round.received++
				}
			}
		})
	}
	ctx := context.Background()
	start := time.Now()
	handles := make([]*manager.Agent, sbsAgents)
	for i := range handles {
		a, err := mgr.Spawn(ctx, manager.SpawnRequest{Type: "bench", Task: "t", Budget: budget})
		if err != nil {
			b.Fatal(err)
		}
		handles[i] = a
	}
	for _, a := range handles {
		<-a.Done()
	}
	// Transcripts count only once they are on disk.
	if err := mgr.Close(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	drained.Wait()
	if st := mgr.Stats(); st.Completed != sbsAgents {
		b.Fatalf("stats %+v", st)
	}
	round.perStep = float64(elapsed.Microseconds()) / float64(sbsAgents*sbsSteps)
	return round
}

// noopTool is the langchaingo side's tool.
type noopTool struct{}

var _ tools.Tool = noopTool{}

func (noopTool) Name() string                                 { return "noop" }
func (noopTool) Description() string                          { return "does nothing" }
func (noopTool) Call(context.Context, string) (string, error) { return "ok", nil }

func sbsLangchaingo(b *testing.B) float64 {
	b.Helper()
	model := sbsModel()
	ctx := context.Background()
	sem := make(chan struct{}, sbsConcurrency)
	var wg sync.WaitGroup
	var failed sync.Once
	start := time.Now()
	for range sbsAgents {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			agent := agents.NewOpenAIFunctionsAgent(model, []tools.Tool{noopTool{}})
			exec := agents.NewExecutor(agent, agents.WithMaxIterations(10))
			out, err := chains.Run(ctx, exec, "t")
			if err != nil || out != "done" {
				failed.Do(func() { b.Errorf("langchaingo run: %q, %v", out, err) })
			}
		}()
	}
	wg.Wait()
	return float64(time.Since(start).Microseconds()) / float64(sbsAgents*sbsSteps)
}

// BenchmarkTelemetry measures, side by side in each iteration, the
// everything-on step with telemetry off, with every span going to an
// in-memory exporter through the SDK's batching processor (as a real
// exporter is fed; blocking, so that none is dropped and each is paid
// for), and with the metrics recorded too. Each is measured right after
// an unmeasured round of itself, as BenchmarkSideBySide's sides are.
func BenchmarkTelemetry(b *testing.B) {
	everything := sbsOptions{budgets: true, subscriber: true, transcripts: true}
	for range b.N {
		off := settled(func() float64 { return sbsTroupeWith(b, everything).perStep })
		spans := settled(func() float64 {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBlocking()))
			withSpans := everything
			withSpans.tracer = tp
			perStep := sbsTroupeWith(b, withSpans).perStep
			// Flushed, not shut down: shutting down empties the exporter.
			if err := tp.ForceFlush(context.Background()); err != nil {
				b.Fatal(err)
			}
			// Each agent: its own span, four chat spans, six tool spans.
			if n := len(exp.GetSpans()); n != sbsAgents*(1+sbsSteps+6) {
				b.Fatalf("exported %d spans, want %d", n, sbsAgents*(1+sbsSteps+6))
			}
			_ = tp.Shutdown(context.Background())
			return perStep
		})
		all := settled(func() float64 {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewInMemoryExporter(), sdktrace.WithBlocking()))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			withAll := everything
			withAll.tracer, withAll.meter = tp, mp
			perStep := sbsTroupeWith(b, withAll).perStep
			_ = tp.Shutdown(context.Background())
			_ = mp.Shutdown(context.Background())
			return perStep
		})

		b.ReportMetric(off, "off-µs/step")
		b.ReportMetric(spans, "spans-µs/step")
		b.ReportMetric(all, "spans+metrics-µs/step")
		b.ReportMetric(spans/off, "spans/off")
	}
}
