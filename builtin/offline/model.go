package offline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/builtin/models/modelcap"
	"github.com/troupe-dev/troupe/builtin/models/modelname"
	"github.com/troupe-dev/troupe/builtin/tools"
)

// Name is the model's name, as in `--model offline`.
const Name = modelname.Offline

// Names of the tools the model calls; they are troupe's builtin tools.
const (
	toolGrep = "grep"
	toolGlob = "glob"
	toolRead = "read"
)

// Stop reasons, as OpenAI-style providers report them.
const (
	stopReasonStop      = "stop"
	stopReasonToolCalls = "tool_calls"
)

// ErrGrepNotOffered is returned when a conversation needs a search but the
// grep tool is not among the tools offered with llms.WithTools.
var ErrGrepNotOffered = errors.New("offline: the offline retrieval model searches with the grep tool, " +
	"which this call does not offer (pass it with llms.WithTools); " +
	"for work without tools, use a language model")

// Model is the offline retrieval model. It holds no state: every answer is
// derived from the messages, so one Model may serve any number of
// conversations at once. The zero value is ready to use.
type Model struct{}

var (
	_ llms.Model                = (*Model)(nil)
	_ modelcap.ToolTokenCounter = (*Model)(nil)
)

// New returns the offline retrieval model.
func New() *Model { return &Model{} }

// CountToolTokens is 0: the model reads no tool definitions and counts
// none in the prompt tokens it reports, so the manager holds no tokens
// for them.
func (*Model) CountToolTokens([]llms.Tool) int { return 0 }

// RetrievalOnly reports that the model cannot reason; the manager refuses
// it for agent types that need a language model.
func (*Model) RetrievalOnly() bool { return true }

// Call answers a single prompt. Like GenerateContent, it needs the grep
// tool in the options.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// GenerateContent runs one step of the retrieval policy: search (glob and
// grep), then read the best files, then answer with ranked findings. Which
// step comes next is decided from the tool calls and tool responses after
// the last human message.
//
// When the delegate tool is offered and the task asks several questions
// (a list, or several sentences ending with '?'), the first step is
// instead one delegate call with an explore task per question, and the
// answer merges the children's findings, one section per question.
func (m *Model) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	s := newStep(ctx, messages, opts)
	content, calls, err := s.next(ctx)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if content != "" && opts.StreamingFunc != nil {
		if err := opts.StreamingFunc(ctx, []byte(content)); err != nil {
			return nil, err
		}
	}
	return response(content, calls, s.conv.chars), nil
}

// step is what one turn is decided from: the conversation since the
// task, the task's terms, the call's tools, and what the budgets leave.
type step struct {
	conv    conversation
	terms   []term
	offered map[string]bool
	al      allowance
	// refused is the response of the last delegate call when it failed.
	refused string
}

// newStep reads the turn from the messages and the call. The task is
// the last human message, unless the manager names the task as its
// caller gave it (modelcap.CallInfo): then the words a type's Prompt
// hook or inherited context added around it are not searched for.
func newStep(ctx context.Context, messages []llms.MessageContent, opts llms.CallOptions) *step {
	s := &step{offered: offeredTools(opts)}
	s.conv = readConversation(messages)
	info, _ := modelcap.CallFrom(ctx)
	if strings.TrimSpace(info.Task) != "" {
		s.conv.task = info.Task
	}
	s.al = allowance{
		tokens:    opts.MaxTokens,
		input:     estimateTokens(s.conv.chars) + perMessageTokens*len(messages),
		turns:     info.Turns,
		toolCalls: info.ToolCalls,
	}
	s.terms = extractTerms(s.conv.task)
	// A delegate call that failed (refused, say) is no end: the task is
	// then searched as one, as without the tool.
	if n := len(s.conv.delegations); n > 0 && strings.HasPrefix(s.conv.delegations[n-1].Content, "error: ") {
		s.refused = s.conv.delegations[n-1].Content
	}
	return s
}

// next is the turn: an answer (content) or tool calls. The children's
// findings are merged once they are back; a task of several questions is
// delegated, one question a child; else the task is searched, then read,
// then answered.
func (s *step) next(ctx context.Context) (content string, calls []llms.ToolCall, err error) {
	var questions []string
	if s.offered[toolDelegate] || len(s.conv.delegations) > 0 {
		questions = splitQuestions(s.conv.task)
	}
	switch {
	case len(s.conv.delegations) > 0 && s.refused == "":
		last := s.conv.delegations[len(s.conv.delegations)-1]
		content = mergeResults(questions, last.Content).fit(s.al.tokens)
	case s.offered[toolDelegate] && len(questions) > 1 && !s.conv.delegated && !s.conv.searched && s.al.delegates(len(questions)):
		content, calls = delegateTurn(questions, s.al)
	case len(s.terms) == 0:
		content, _ = answer{noTerms: true, refused: s.refused}.fit(s.al.tokens)
	case !s.conv.searched:
		if !s.offered[toolGrep] {
			return "", nil, ErrGrepNotOffered
		}
		content, calls = searchTurn(newRanker(s.conv.task, s.terms), s.terms, s.offered, s.al)
	default:
		return s.afterSearch(ctx)
	}
	return content, calls, nil
}

// afterSearch reads what the search found, or answers from what was read.
func (s *step) afterSearch(ctx context.Context) (string, []llms.ToolCall, error) {
	r := newRanker(s.conv.task, s.terms)
	ev := s.conv.evidence(r)
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	if content, calls, ok := s.fromDefinitions(r, ev); ok {
		return content, calls, nil
	}
	a := answer{searched: grepTerms(s.terms), refused: s.refused, suggestions: suggestions(s.terms)}
	content, _ := a.fit(s.al.tokens)
	return content, nil, nil
}

// fromDefinitions is the turn the definitions found make: read the best
// of them, or answer with their spans. It is false when no definition
// was found, or none makes a finding.
func (s *step) fromDefinitions(r *ranker, ev evidence) (string, []llms.ToolCall, bool) {
	cands := r.candidates(ev)
	if len(cands) == 0 {
		return "", nil, false
	}
	n := maxReadFiles
	if s.al.lean() {
		n = leanReads // a tight budget, as a child's share
	}
	plan := readPlan(cands, n)
	a := answer{searched: r.searched(), findings: r.findings(r.resolve(cands, ev.reads)), refused: s.refused}
	if !s.conv.read && s.offered[toolRead] && len(plan) > 0 {
		if content, calls := s.readTurn(plan, a); len(calls) > 0 {
			return content, calls, true
		}
	}
	if len(a.findings) == 0 {
		return "", nil, false
	}
	content, _ := a.fit(s.al.tokens)
	return content, nil, true
}

// response is the turn as a provider returns it, with token counts
// estimated from inChars, the bytes of the messages, and what it says.
func response(content string, calls []llms.ToolCall, inChars int) *llms.ContentResponse {
	choice := &llms.ContentChoice{Content: content, StopReason: stopReasonStop}
	if len(calls) > 0 {
		choice.StopReason = stopReasonToolCalls
		choice.ToolCalls = calls
		fc := *calls[0].FunctionCall
		choice.FuncCall = &fc
	}
	in := estimateTokens(inChars)
	out := estimateTokens(outputChars(content, calls))
	choice.GenerationInfo = map[string]any{
		"PromptTokens":     in,
		"CompletionTokens": out,
		"TotalTokens":      in + out,
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}
}

// offeredTools returns the names of the tools (and legacy functions) in
// the options.
func offeredTools(opts llms.CallOptions) map[string]bool {
	names := make(map[string]bool)
	for _, t := range opts.Tools {
		if t.Function != nil {
			names[t.Function.Name] = true
		}
	}
	for _, f := range opts.Functions {
		names[f.Name] = true
	}
	return names
}

// conversation is what the model needs from the messages.
type conversation struct {
	task      string                       // the last human message
	calls     map[string]llms.FunctionCall // tool calls after it, by ID
	responses []llms.ToolCallResponse      // tool responses after it
	searched  bool                         // grep or glob was called
	read      bool                         // read was called
	delegated bool                         // delegate was called
	// delegations are the delegate tool's responses after the task.
	delegations []llms.ToolCallResponse
	chars       int // bytes of all message text
}

func readConversation(messages []llms.MessageContent) conversation {
	c := conversation{calls: make(map[string]llms.FunctionCall)}
	last := -1
	for i, msg := range messages {
		if msg.Role == llms.ChatMessageTypeHuman {
			last = i
		}
		for _, p := range msg.Parts {
			c.chars += partChars(p)
		}
	}
	if last < 0 {
		return c
	}
	var task []string
	for _, p := range messages[last].Parts {
		if t, ok := p.(llms.TextContent); ok {
			task = append(task, t.Text)
		}
	}
	c.task = strings.Join(task, "\n")
	for _, msg := range messages[last+1:] {
		for _, p := range msg.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				if p.FunctionCall != nil {
					c.calls[p.ID] = *p.FunctionCall
					c.note(p.FunctionCall.Name)
				}
			case llms.ToolCallResponse:
				c.responses = append(c.responses, p)
				c.note(c.toolName(p))
				if c.toolName(p) == toolDelegate {
					c.delegations = append(c.delegations, p)
				}
			}
		}
	}
	return c
}

func (c *conversation) note(tool string) {
	switch tool {
	case toolGrep, toolGlob, toolSymbols:
		c.searched = true
	case toolRead:
		c.read = true
	case toolDelegate:
		c.delegated = true
	}
}

// toolName is the name of the tool that produced a response.
func (c *conversation) toolName(r llms.ToolCallResponse) string {
	if r.Name != "" {
		return r.Name
	}
	if call, ok := c.calls[r.ToolCallID]; ok {
		return call.Name
	}
	if r.ToolCallID == delegateCallID {
		return toolDelegate
	}
	return ""
}

var readCallIDRe = lazyRE(`^call_2_(\d+)$`)

// evidence collects the tool output. A read response whose call is not in
// the messages is matched to the read plan by its ID; the plan is
// recomputed from the search results, which gives the same files.
func (c *conversation) evidence(r *ranker) evidence {
	ev := evidence{reads: make(map[string][]hit)}
	var orphans []llms.ToolCallResponse
	for _, r := range c.responses {
		switch c.toolName(r) {
		case toolGrep:
			ev.grep = append(ev.grep, parseGrep(r.Content)...)
		case toolGlob:
			ev.glob = append(ev.glob, parseGlob(r.Content)...)
		case toolSymbols:
			counts, syms := tools.ParseSymbols(r.Content)
			ev.syms, ev.symCounts = append(ev.syms, syms...), counts
		case toolRead:
			var args struct {
				Path string `json:"path"`
			}
			call, ok := c.calls[r.ToolCallID]
			if !ok || json.Unmarshal([]byte(call.Arguments), &args) != nil || args.Path == "" {
				orphans = append(orphans, r)
				continue
			}
			p := cleanPath(args.Path)
			ev.reads[p] = append(ev.reads[p], parseRead(p, r.Content)...)
		}
	}
	if len(orphans) == 0 {
		return ev
	}
	plan := readPlan(r.candidates(ev), maxReadFiles)
	for _, resp := range orphans {
		m := readCallIDRe.FindStringSubmatch(resp.ToolCallID)
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		if i < len(plan) {
			p := plan[i].path
			ev.reads[p] = append(ev.reads[p], parseRead(p, resp.Content)...)
		}
	}
	return ev
}

// searchTurn asks for the declarations whose names or doc comments hold
// the concepts (symbols, when offered), a glob on file names, a grep per
// concept of the question for the definitions that name it, a grep for
// the lines where two concepts meet, and a grep per top term for its
// mentions: as much of that as the allowance pays for (fitSearch).
func searchTurn(r *ranker, terms []term, offered map[string]bool, al allowance) (string, []llms.ToolCall) {
	q := r.searchQuery()
	mentions := 2
	if al.lean() {
		// A tight budget, as a child's share of its parent's: fewer
		// calls too, as tool calls are shared the same way.
		q, mentions = q[:min(len(q), leanConcepts)], 1
	}
	// Best first, for fitSearch: the declarations (symbols), the
	// definitions, where concepts meet, the mentions, the comments, the
	// file names.
	var calls []searchCall
	if query := symbolsQuery(q); offered[toolSymbols] && query != "" {
		calls = append(calls, searchCall{kind: symbolsSearch, pattern: query, results: symbolsResults})
	}
	for _, w := range q {
		calls = append(calls, searchCall{kind: defSearch, pattern: defGrepPattern(w), results: defGrepResults})
	}
	if len(q) > 1 {
		calls = append(calls, searchCall{kind: pairSearch, pattern: pairGrepPattern(q[:min(len(q), 4)]), results: pairGrepResults})
	}
	for _, t := range grepTerms(terms)[:min(len(terms), mentions)] {
		calls = append(calls, searchCall{kind: mentionSearch, pattern: regexp.QuoteMeta(t), results: grepMaxResults})
	}
	if p := commentGrepPattern(q); p != "" {
		calls = append(calls, searchCall{kind: commentSearch, pattern: p, results: commentGrepResults})
	}
	if pattern := globPattern(terms); offered[toolGlob] && pattern != "" {
		calls = append(calls, searchCall{kind: globSearch, pattern: pattern})
	}
	var names []string
	for _, w := range q {
		names = append(names, w.text)
	}
	if len(names) == 0 {
		names = grepTerms(terms)
	}
	text := "Searching for " + codeList(names) + "."
	if limited(al.turns, 2) {
		text += " The turn budget leaves no turn to answer from what this finds: allow at least two."
	}
	return fitCalls(text, searchToolCalls(al.fitSearch(text, calls)), al.tokens)
}

// searchToolCalls writes the search calls in the order the search has
// always made them: the glob, the declarations (symbols), the
// definitions, where concepts meet, the comments, the mentions.
func searchToolCalls(fitted []searchCall) []llms.ToolCall {
	type grepArgs struct {
		Pattern    string `json:"pattern"`
		IgnoreCase bool   `json:"ignore_case,omitempty"`
		MaxResults int    `json:"max_results"`
	}
	fitted = slices.Clone(fitted)
	slices.SortStableFunc(fitted, func(a, b searchCall) int { return int(a.kind) - int(b.kind) })
	calls := make([]llms.ToolCall, len(fitted))
	for i, c := range fitted {
		id := fmt.Sprintf("call_1_%d", i)
		switch c.kind {
		case globSearch:
			calls[i] = toolCall(id, toolGlob, struct {
				Pattern string `json:"pattern"`
			}{c.pattern})
			continue
		case symbolsSearch:
			calls[i] = toolCall(id, toolSymbols, struct {
				Query      string `json:"query"`
				MaxResults int    `json:"max_results"`
			}{c.pattern, c.results})
			continue
		}
		calls[i] = toolCall(id, toolGrep, grepArgs{c.pattern, c.kind == mentionSearch, c.results})
	}
	return calls
}

// searched are the concepts searched, for the answer.
func (r *ranker) searched() []string {
	var out []string
	for _, w := range r.searchQuery() {
		out = append(out, w.text)
	}
	return out
}

// readTurn asks to read the planned windows (best first) that the
// allowance pays for, and says what the search alone found, so that a
// run cut short while it reads still returns findings. No calls means
// that no read is paid for: answer now.
func (s *step) readTurn(plan []readReq, sofar answer) (string, []llms.ToolCall) {
	text := func(plan []readReq) string {
		var paths []string
		for _, p := range plan {
			if !slices.Contains(paths, p.path) {
				paths = append(paths, p.path)
			}
		}
		t := "Reading the best matches: " + codeList(paths) + "."
		if len(sofar.findings) > 0 {
			t += " Until they are read, the findings are the search's:\n\n" + sofar.render(len(sofar.findings), false)
		}
		return t
	}
	plan = plan[:s.al.reads(plan, text(plan))]
	if len(plan) == 0 {
		return "", nil
	}
	calls := make([]llms.ToolCall, len(plan))
	for i, p := range plan {
		calls[i] = toolCall(fmt.Sprintf("call_2_%d", i), toolRead, struct {
			Path   string `json:"path"`
			Offset int    `json:"offset"`
			Limit  int    `json:"limit"`
		}{p.path, p.offset, p.limit})
	}
	return fitCalls(text(plan), calls, s.al.tokens)
}

// fitCalls keeps a tool-call turn within maxTokens: the text goes first,
// then calls from the end; one call always stays.
func fitCalls(content string, calls []llms.ToolCall, maxTokens int) (string, []llms.ToolCall) {
	if maxTokens <= 0 {
		return content, calls
	}
	if estimateTokens(outputChars(content, calls)) > maxTokens {
		content = ""
	}
	for len(calls) > 1 && estimateTokens(outputChars(content, calls)) > maxTokens {
		calls = calls[:len(calls)-1]
	}
	return content, calls
}

func toolCall(id, name string, args any) llms.ToolCall {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(args) // plain structs of strings, bools and ints
	return llms.ToolCall{
		ID:   id,
		Type: "function",
		FunctionCall: &llms.FunctionCall{
			Name:      name,
			Arguments: strings.TrimSpace(buf.String()),
		},
	}
}

// grepTerms are the terms searched with grep.
func grepTerms(terms []term) []string {
	out := make([]string, 0, maxGrepTerms)
	for _, t := range terms[:min(len(terms), maxGrepTerms)] {
		out = append(out, t.text)
	}
	return out
}

var globSafeRe = lazyRE(`^[A-Za-z0-9_.\-]+$`)

// globPattern matches file names containing any of the top terms, in the
// spellings a file name would use: as written, lower case, snake_case.
func globPattern(terms []term) string {
	var variants []string
	seen := make(map[string]bool)
	addVariant := func(v string) {
		if len(variants) < maxGlobVariants && len(v) >= minTermLen && !seen[v] {
			seen[v] = true
			variants = append(variants, v)
		}
	}
	used := 0
	for _, t := range terms {
		if used == maxGlobTerms {
			break
		}
		if !globSafeRe.MatchString(t.text) {
			continue
		}
		used++
		addVariant(t.lower)
		addVariant(t.text)
		if parts := splitIdent(t.text); len(parts) > 1 {
			addVariant(strings.ToLower(strings.Join(parts, "_")))
		}
	}
	switch len(variants) {
	case 0:
		return ""
	case 1:
		return "**/*" + variants[0] + "*"
	default:
		return "**/*{" + strings.Join(variants, ",") + "}*"
	}
}

// suggestions are other spellings to try when nothing matched: the terms
// not searched, word stems, and snake_case or camelCase variants.
func suggestions(terms []term) []string {
	const maxSuggestions = 5
	var out []string
	seen := make(map[string]bool)
	for _, t := range terms {
		seen[t.lower] = true
	}
	add := func(s string) {
		if len(out) < maxSuggestions && len(s) >= minTermLen && !seen[strings.ToLower(s)] {
			seen[strings.ToLower(s)] = true
			out = append(out, s)
		}
	}
	for _, t := range terms[min(len(terms), maxGrepTerms):] {
		if len(out) < 3 {
			add(t.text)
		}
	}
	for _, t := range terms[:min(len(terms), maxGrepTerms)] {
		if parts := splitIdent(t.text); len(parts) > 1 {
			if strings.Contains(t.text, "_") {
				add(camel(parts))
			} else {
				add(strings.ToLower(strings.Join(parts, "_")))
			}
			continue
		}
		add(wordStem(t.lower))
	}
	return out
}

func camel(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		p = strings.ToLower(p)
		if i > 0 && p != "" {
			p = strings.ToUpper(p[:1]) + p[1:]
		}
		b.WriteString(p)
	}
	return b.String()
}

// partChars is the size of a message part as the token estimate sees it.
func partChars(p llms.ContentPart) int {
	switch p := p.(type) {
	case llms.TextContent:
		return len(p.Text)
	case llms.ToolCall:
		if p.FunctionCall != nil {
			return len(p.FunctionCall.Name) + len(p.FunctionCall.Arguments)
		}
	case llms.ToolCallResponse:
		return len(p.Content)
	case llms.ImageURLContent:
		return len(p.URL)
	case llms.BinaryContent:
		return len(p.Data)
	}
	return 0
}

// outputChars is the size of a reply: its text and its tool calls.
func outputChars(content string, calls []llms.ToolCall) int {
	n := len(content)
	for _, c := range calls {
		n += partChars(c)
	}
	return n
}
