package manager

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/semconv/v1.40.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
)

// instrumentation is the name the manager's tracer and meter go by.
const instrumentation = "github.com/troupe-dev/troupe/manager"

// maxContentBytes bounds each prompt, completion, tool argument or tool
// result text put on a span when content is recorded.
const maxContentBytes = 16 << 10

// Bucket boundaries the GenAI conventions advise for their histograms.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// telemetry makes the manager's spans and records its metrics. A manager
// configured with neither provider has none, and each place that would
// use it pays one nil check.
type telemetry struct {
	tracer  trace.Tracer // nil: no spans
	content bool

	tokens   genaiconv.ClientTokenUsage
	duration genaiconv.ClientOperationDuration
	ends     metric.Int64Counter
	metered  bool
	reg      metric.Registration

	// models caches, per model name, its provider and model and the
	// attribute sets its metrics are recorded with.
	models sync.Map // string → *modelAttrs
}

// modelAttrs are one model name's parts and metric attribute sets.
type modelAttrs struct {
	provider, model string
	input, output   metric.MeasurementOption
	duration        metric.MeasurementOption
}

// newTelemetry returns nil when cfg asks for neither spans nor metrics.
func newTelemetry(m *Manager, cfg *Config) (*telemetry, error) {
	if cfg.TracerProvider == nil && cfg.MeterProvider == nil {
		return nil, nil
	}
	t := &telemetry{content: cfg.RecordContent}
	if cfg.TracerProvider != nil {
		t.tracer = cfg.TracerProvider.Tracer(instrumentation)
	}
	if cfg.MeterProvider != nil {
		if err := t.meter(m, cfg.MeterProvider.Meter(instrumentation)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// meter creates the instruments: the GenAI conventions' token usage and
// operation duration, the agents that ended by state and reason, and
// gauges of the agents by state and of the queue's length.
func (t *telemetry) meter(m *Manager, mt metric.Meter) error {
	var err error
	if t.tokens, err = genaiconv.NewClientTokenUsage(mt, metric.WithExplicitBucketBoundaries(tokenBuckets...)); err != nil {
		return err
	}
	if t.duration, err = genaiconv.NewClientOperationDuration(mt, metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return err
	}
	if t.ends, err = mt.Int64Counter("troupe.agent.ends", metric.WithUnit("{agent}"),
		metric.WithDescription("Agents that ended, by state and reason (budget_tokens, budget_time, cancelled, ...).")); err != nil {
		return err
	}
	agents, err := mt.Int64ObservableGauge("troupe.agents", metric.WithUnit("{agent}"),
		metric.WithDescription("Agents known to the manager, by lifecycle state."))
	if err != nil {
		return err
	}
	queue, err := mt.Int64ObservableGauge("troupe.queue.length", metric.WithUnit("{agent}"),
		metric.WithDescription("Agents waiting for a running slot."))
	if err != nil {
		return err
	}
	states := [numStates]metric.ObserveOption{}
	for s := Pending; s < numStates; s++ {
		states[s] = metric.WithAttributes(attribute.String("troupe.agent.state", s.String()))
	}
	t.reg, err = mt.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for s := Pending; s < numStates; s++ {
			o.ObserveInt64(agents, m.counts[s].Load(), states[s])
		}
		m.mu.Lock()
		n := m.queue.n
		m.mu.Unlock()
		o.ObserveInt64(queue, int64(n))
		return nil
	}, agents, queue)
	t.metered = true
	return err
}

// close stops the gauges' callback, so a closed manager is not observed.
func (t *telemetry) close() {
	if t != nil && t.reg != nil {
		_ = t.reg.Unregister()
	}
}

// modelOf splits a model name, "provider:model", caching its metric
// attributes. A name without a provider is its own model.
func (t *telemetry) modelOf(name string) *modelAttrs {
	if v, ok := t.models.Load(name); ok {
		return v.(*modelAttrs)
	}
	ma := &modelAttrs{model: name}
	if p, mo, ok := strings.Cut(name, ":"); ok {
		ma.provider, ma.model = p, mo
	}
	base := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(ma.provider),
		semconv.GenAIRequestModelKey.String(ma.model),
	}
	with := func(kv attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(base[:len(base):len(base)], kv)...))
	}
	ma.input = with(semconv.GenAITokenTypeInput)
	ma.output = with(semconv.GenAITokenTypeOutput)
	ma.duration = metric.WithAttributeSet(attribute.NewSet(base...))
	v, _ := t.models.LoadOrStore(name, ma)
	return v.(*modelAttrs)
}

// startAgent starts a's invoke_agent span, from when it was created, as a
// child of the span in the context it was spawned with: the delegate
// call's, or the Go caller's; else its parent agent's.
func (t *telemetry) startAgent(spawnCtx context.Context, a *Agent) {
	if t == nil || t.tracer == nil {
		return
	}
	parent := trace.SpanContextFromContext(spawnCtx)
	if !parent.IsValid() && a.parent != nil {
		parent = a.parent.spanContext()
	}
	ctx := trace.ContextWithSpanContext(context.Background(), parent)
	ma := t.modelOf(a.modelName)
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentIDKey.String(a.id),
		semconv.GenAIAgentNameKey.String(a.typ.Name),
		semconv.GenAIProviderNameKey.String(ma.provider),
		semconv.GenAIRequestModelKey.String(ma.model),
		attribute.Int("troupe.agent.depth", a.depth),
	}
	if a.typ.Description != "" {
		attrs = append(attrs, semconv.GenAIAgentDescriptionKey.String(cutEnd(a.typ.Description, 512)))
	}
	if a.label != "" {
		attrs = append(attrs, attribute.String("troupe.agent.label", a.label))
	}
	if a.parentID != "" {
		attrs = append(attrs, attribute.String("troupe.agent.parent_id", a.parentID))
	}
	attrs = appendBudget(attrs, a)
	if t.content {
		attrs = append(attrs, attribute.String("troupe.agent.task", cutEnd(a.task, maxContentBytes)))
	}
	_, span := t.tracer.Start(ctx, "invoke_agent "+a.typ.Name,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(a.created), trace.WithAttributes(attrs...))
	// Under mu: a is known by its ID already, and a child spawned by a Go
	// caller that found it may read it at once.
	a.mu.Lock()
	a.span = span
	a.mu.Unlock()
}

// spanContext is a's span's context, for a child spawned without a span
// of its own to go under.
func (a *Agent) spanContext() trace.SpanContext {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.span == nil {
		return trace.SpanContext{}
	}
	return a.span.SpanContext()
}

// appendBudget adds the budget fields a sets.
func appendBudget(attrs []attribute.KeyValue, a *Agent) []attribute.KeyValue {
	b := a.budget
	if b.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int("troupe.budget.max_tokens", b.MaxTokens))
	}
	if b.MaxTime > 0 {
		attrs = append(attrs, attribute.Float64("troupe.budget.max_time_seconds", b.MaxTime.Seconds()))
	}
	if b.MaxToolCalls > 0 {
		attrs = append(attrs, attribute.Int("troupe.budget.max_tool_calls", b.MaxToolCalls))
	}
	if b.MaxTurns > 0 {
		attrs = append(attrs, attribute.Int("troupe.budget.max_turns", b.MaxTurns))
	}
	if b.MaxCostUSD > 0 {
		attrs = append(attrs, attribute.Float64("troupe.budget.max_cost_usd", b.MaxCostUSD))
	}
	return attrs
}

// endAgent ends a's span with how it ended and what it and its subtree
// spent, and counts the end.
func (t *telemetry) endAgent(a *Agent, r *Result, end time.Time) {
	if t == nil {
		return
	}
	if t.metered {
		t.ends.Add(context.Background(), 1, metric.WithAttributes(
			attribute.String("troupe.agent.state", r.State.String()),
			attribute.String("troupe.agent.reason", string(r.Reason)),
			semconv.GenAIAgentNameKey.String(a.typ.Name)))
	}
	if a.span == nil {
		return
	}
	a.span.SetAttributes(
		attribute.String("troupe.agent.state", r.State.String()),
		attribute.String("troupe.agent.reason", string(r.Reason)),
		semconv.GenAIUsageInputTokensKey.Int(r.OwnUsage.InputTokens),
		semconv.GenAIUsageOutputTokensKey.Int(r.OwnUsage.OutputTokens),
		attribute.Int("troupe.usage.subtree.input_tokens", r.Usage.InputTokens),
		attribute.Int("troupe.usage.subtree.output_tokens", r.Usage.OutputTokens),
		attribute.Float64("troupe.usage.cost_usd", r.OwnUsage.CostUSD),
		attribute.Float64("troupe.usage.subtree.cost_usd", r.Usage.CostUSD),
		attribute.Int("troupe.agent.tool_calls", r.ToolCalls),
		attribute.Int("troupe.agent.turns", r.Turns),
	)
	if r.Partial {
		a.span.SetAttributes(attribute.Bool("troupe.agent.partial", true))
	}
	if t.content && r.Output != "" {
		a.span.SetAttributes(attribute.String("troupe.agent.output", cutEnd(r.Output, maxContentBytes)))
	}
	if r.State != Completed {
		a.span.SetAttributes(semconv.ErrorTypeKey.String(string(r.Reason)))
		a.span.SetStatus(codes.Error, t.describe(string(r.Reason), r.Error))
	}
	a.span.End(trace.WithTimestamp(end))
}

// chatSpan is one model call's span; the zero value records nothing.
type chatSpan struct {
	span  trace.Span
	ma    *modelAttrs
	start time.Time
}

// startChat starts a chat span for a call of a's model, under the span
// in ctx (the agent's, or a tool call's for a parent answering a child),
// else under a's own.
func (t *telemetry) startChat(ctx context.Context, a *Agent, c *modelCall, maxOut int) (context.Context, chatSpan) {
	if t == nil {
		return ctx, chatSpan{}
	}
	return t.startChatSpan(ctx, a, c, maxOut)
}

// startChatSpan is startChat with telemetry on: apart, since its frame
// is large, and a goroutine entering it grows its stack, which with
// telemetry off it need not.
func (t *telemetry) startChatSpan(ctx context.Context, a *Agent, c *modelCall, maxOut int) (context.Context, chatSpan) {
	cs := chatSpan{ma: t.modelOf(a.modelName), start: time.Now()}
	if t.tracer == nil {
		return ctx, cs
	}
	if !trace.SpanContextFromContext(ctx).IsValid() && a.span != nil {
		ctx = trace.ContextWithSpan(ctx, a.span)
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs,
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(cs.ma.provider),
		semconv.GenAIRequestModelKey.String(cs.ma.model),
		semconv.GenAIAgentIDKey.String(a.id),
		semconv.GenAIAgentNameKey.String(a.typ.Name))
	if maxOut > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokensKey.Int(maxOut))
	}
	ctx, cs.span = t.tracer.Start(ctx, "chat "+cs.ma.model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if t.content && cs.span.IsRecording() {
		cs.span.SetAttributes(semconv.GenAIInputMessagesKey.String(messagesJSON(c.msgs, maxContentBytes)))
	}
	return ctx, cs
}

// endChat ends a model call's span with its usage and finish reason, or
// its error, and records the call's tokens and duration.
func (t *telemetry) endChat(ctx context.Context, cs chatSpan, r *modelReply, err error) {
	if t == nil {
		return
	}
	if t.metered {
		t.duration.Inst().Record(ctx, time.Since(cs.start).Seconds(), cs.ma.duration)
		if err == nil && r.choice != nil {
			t.tokens.Inst().Record(ctx, int64(r.usage.InputTokens), cs.ma.input)
			t.tokens.Inst().Record(ctx, int64(r.usage.OutputTokens), cs.ma.output)
		}
	}
	if cs.span == nil {
		return
	}
	if err != nil {
		typ := errorType(err)
		cs.span.SetAttributes(semconv.ErrorTypeKey.String(typ))
		cs.span.SetStatus(codes.Error, t.describe(typ, err.Error()))
		cs.span.End()
		return
	}
	ch := r.choice
	cs.span.SetAttributes(
		semconv.GenAIUsageInputTokensKey.Int(r.usage.InputTokens),
		semconv.GenAIUsageOutputTokensKey.Int(r.usage.OutputTokens),
		semconv.GenAIResponseFinishReasonsKey.StringSlice([]string{finishReason(ch)}),
		attribute.Int("troupe.turn", r.turn),
	)
	if model, ok := ch.GenerationInfo["Model"].(string); ok && model != "" {
		cs.span.SetAttributes(semconv.GenAIResponseModelKey.String(model))
	}
	if r.usage.CostUSD > 0 {
		cs.span.SetAttributes(attribute.Float64("troupe.usage.cost_usd", r.usage.CostUSD))
	}
	if r.usage.Estimated {
		cs.span.SetAttributes(attribute.Bool("troupe.usage.estimated", true))
	}
	if t.content {
		cs.span.SetAttributes(semconv.GenAIOutputMessagesKey.String(choiceJSON(ch, maxContentBytes)))
	}
	cs.span.End()
}

// finishReason is a choice's stop reason, or the conventions' name for
// what it did when the provider gave none.
func finishReason(ch *llms.ContentChoice) string {
	switch {
	case ch.StopReason != "":
		return ch.StopReason
	case len(ch.ToolCalls) > 0:
		return "tool_call"
	}
	return "stop"
}

// startTool starts an execute_tool span under the span in ctx, which
// then carries it: a tool's own spans, a plugin's and a delegated child's
// invoke_agent are its children.
func (t *telemetry) startTool(ctx context.Context, a *Agent, c llms.ToolCall) (context.Context, trace.Span) {
	if t == nil || t.tracer == nil {
		return ctx, nil
	}
	name := c.FunctionCall.Name
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs,
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolNameKey.String(name),
		semconv.GenAIToolCallIDKey.String(c.ID),
		semconv.GenAIToolType("function"),
		semconv.GenAIAgentIDKey.String(a.id))
	if t.content {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(cutEnd(c.FunctionCall.Arguments, maxContentBytes)))
	}
	return t.tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// endTool ends a tool call's span with its error's type, or its result's
// size (and text, when content is recorded).
func (t *telemetry) endTool(span trace.Span, o *toolOutcome) {
	if span == nil {
		return
	}
	if o.err != nil {
		typ := errorType(o.err)
		span.SetAttributes(semconv.ErrorTypeKey.String(typ))
		span.SetStatus(codes.Error, t.describe(typ, o.err.Error()))
	} else {
		span.SetAttributes(attribute.Int("troupe.tool.result_bytes", len(o.text)))
	}
	if t.content {
		span.SetAttributes(semconv.GenAIToolCallResultKey.String(cutEnd(o.text, maxContentBytes)))
	}
	span.End()
}

// describe is a span's status description: the error's text only when
// content is recorded, since a tool's or a provider's error can quote
// what it read; else its type.
func (t *telemetry) describe(typ, text string) string {
	if t.content {
		return cutMiddle(text, maxToolError)
	}
	return typ
}

// errorType names an error for error.type: low in cardinality, as the
// conventions ask.
func errorType(err error) string {
	var stop *runStop
	switch {
	case errors.As(err, &stop) && stop.reason != "":
		return string(stop.reason)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, ErrToolPanic):
		return "tool_panic"
	case errors.Is(err, ErrBudgetExceeded):
		return "budget_exceeded"
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		return "panic"
	}
	return "_OTHER"
}

// messagePart and message are the conventions' shape of chat messages
// (gen_ai.input.messages, gen_ai.output.messages).
type messagePart struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Response  string `json:"response,omitempty"`
}

type message struct {
	Role         string        `json:"role"`
	Parts        []messagePart `json:"parts"`
	FinishReason string        `json:"finish_reason,omitempty"`
}

var roles = map[llms.ChatMessageType]string{
	llms.ChatMessageTypeSystem: "system", llms.ChatMessageTypeHuman: "user",
	llms.ChatMessageTypeAI: "assistant", llms.ChatMessageTypeTool: "tool",
	llms.ChatMessageTypeGeneric: "user", llms.ChatMessageTypeFunction: "tool",
}

// messagesJSON encodes msgs in the conventions' shape, within limit
// bytes: each message is encoded once, with its parts cut so that it fits,
// and the newest that fit together are kept, in order. The result is
// always whole JSON.
func messagesJSON(msgs []llms.MessageContent, limit int) string {
	kept := make([][]byte, 0, len(msgs))
	size := 2 // the brackets
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		b := fitted(limit-size, func(partLimit int) message {
			msg := message{Role: roles[m.Role]}
			for _, p := range m.Parts {
				msg.Parts = append(msg.Parts, partOf(p, partLimit))
			}
			return msg
		})
		if b == nil {
			break
		}
		size += len(b) + 1
		kept = append(kept, b)
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i := len(kept) - 1; i >= 0; i-- {
		out = append(out, kept[i]...)
		if i > 0 {
			out = append(out, ',')
		}
	}
	return string(append(out, ']'))
}

// fitted encodes the message build makes with its parts cut to a share
// of room, halving the share until the encoding fits in room bytes; nil
// when not even a message with empty parts does.
func fitted(room int, build func(partLimit int) message) []byte {
	for partLimit := room; ; partLimit /= 2 {
		b, err := json.Marshal(build(partLimit))
		if err == nil && len(b) <= room {
			return b
		}
		if partLimit == 0 {
			return nil
		}
	}
}

func partOf(p llms.ContentPart, limit int) messagePart {
	switch p := p.(type) {
	case llms.TextContent:
		return messagePart{Type: "text", Content: cutEnd(p.Text, limit)}
	case llms.ToolCall:
		mp := messagePart{Type: "tool_call", ID: p.ID}
		if p.FunctionCall != nil {
			mp.Name, mp.Arguments = p.FunctionCall.Name, cutEnd(p.FunctionCall.Arguments, limit)
		}
		return mp
	case llms.ToolCallResponse:
		return messagePart{Type: "tool_call_response", ID: p.ToolCallID, Response: cutEnd(p.Content, limit)}
	}
	return messagePart{Type: "other"}
}

// choiceJSON encodes a model's answer as the conventions' output
// messages, within limit bytes, as whole JSON.
func choiceJSON(ch *llms.ContentChoice, limit int) string {
	b := fitted(limit-2, func(partLimit int) message {
		msg := message{Role: "assistant", FinishReason: finishReason(ch)}
		if ch.Content != "" {
			msg.Parts = append(msg.Parts, messagePart{Type: "text", Content: cutEnd(ch.Content, partLimit)})
		}
		for _, tc := range ch.ToolCalls {
			msg.Parts = append(msg.Parts, partOf(tc, partLimit))
		}
		return msg
	})
	if b == nil {
		return "[]"
	}
	return "[" + string(b) + "]"
}
