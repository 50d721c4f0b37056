package offline

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/builtin/models/modelcap"
)

// toolDelegate is the tool that hands tasks to child agents.
const toolDelegate = "delegate"

// delegateCallID is the ID of the model's one delegate call; a response
// with neither a name nor an echoed call is matched to it by this ID.
const delegateCallID = "call_1_delegate"

// Bounds of a delegation and of the merged answer.
const (
	delegateConcurrency = 2
	maxMergedFindings   = 8    // per question
	maxQuotedBytes      = 2000 // of a result that is not JSON, or a report without findings
	maxMergedSnippet    = 160  // runes
)

// delegateArgs are the delegate tool's arguments.
type delegateArgs struct {
	Tasks       []delegateTask `json:"tasks"`
	Concurrency int            `json:"concurrency"`
	Mode        string         `json:"mode"`
	Return      string         `json:"return"`
}

type delegateTask struct {
	Label        string `json:"label"`
	Type         string `json:"type"`
	Prompt       string `json:"prompt"`
	MaxTokens    int    `json:"max_tokens,omitempty"`
	MaxToolCalls int    `json:"max_tool_calls,omitempty"`
}

// Tokens the parent keeps for reading its children's results and
// answering: a base and a share per child (its report, read, and its
// findings, written again); and the fewest tokens a child's share may
// hold, which pay for a short search and its answer.
const (
	mergeReserveBase     = 1000
	mergeReservePerChild = 1200
	minChildTokens       = 1500
)

// childTokens shares the tokens left (maxTokens, 0 for no limit) among n
// children, after what the parent needs to merge their results; 0 when
// there is no limit to share.
func childTokens(maxTokens, n int) int {
	if maxTokens <= 0 || n == 0 {
		return 0
	}
	return max(1, (maxTokens-mergeReserveBase-n*mergeReservePerChild)/n)
}

// childToolCalls shares the tool calls left after the delegate call
// itself among n children; 0 when there is no limit to share. Children
// run at once and draw on the parent's tool calls together: without a
// share of its own, a child would plan with calls a sibling spends.
func childToolCalls(toolCalls, n int) int {
	if toolCalls == modelcap.Unlimited || n == 0 {
		return 0
	}
	return max(0, toolCalls-1) / n
}

// delegates reports whether the allowance pays for n children (at most
// maxQuestions), each with a search of its own, and a turn to merge their
// findings in; else the task is searched as one.
func (al allowance) delegates(n int) bool {
	n = min(n, maxQuestions)
	switch {
	case limited(al.turns, 2):
		return false
	case al.toolCalls != modelcap.Unlimited && childToolCalls(al.toolCalls, n) < 1:
		return false
	}
	return al.tokens <= 0 || childTokens(al.tokens, n) >= minChildTokens
}

// delegateTurn asks for one explore child per question, at most
// maxQuestions.
func delegateTurn(qs []string, al allowance) (string, []llms.ToolCall) {
	qs = qs[:min(len(qs), maxQuestions)]
	args := delegateArgs{Concurrency: delegateConcurrency, Mode: "parallel", Return: "json"}
	// Each child gets its share of the tokens and tool calls left, so
	// that together they stay within the parent's budget; a child
	// searches within its own.
	tokens, calls := childTokens(al.tokens, len(qs)), childToolCalls(al.toolCalls, len(qs))
	for i, label := range labels(qs) {
		args.Tasks = append(args.Tasks, delegateTask{Label: label, Type: "explore", Prompt: qs[i], MaxTokens: tokens, MaxToolCalls: calls})
	}
	content := fmt.Sprintf("The task lists %d questions; handing each to an explore agent.", len(qs))
	return fitCalls(content, []llms.ToolCall{toolCall(delegateCallID, toolDelegate, args)}, al.tokens)
}

// delegateResult is what the model reads of the delegate tool's JSON
// result; other fields are ignored.
type delegateResult struct {
	Completed int           `json:"completed"`
	Partial   int           `json:"partial"`
	Failed    int           `json:"failed"`
	Total     int           `json:"total"`
	Results   []childResult `json:"results"`
}

type childResult struct {
	Label     string `json:"label"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
	ToolCalls int    `json:"tool_calls"`
	Turns     int    `json:"turns"`
	Report    string `json:"report"`
	Error     string `json:"error"`
}

// parseDelegateResult reads the delegate tool's result: a JSON object,
// alone or with text or a code fence around it.
func parseDelegateResult(text string) (delegateResult, bool) {
	var r delegateResult
	candidates := []string{strings.TrimSpace(text)}
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i {
		candidates = append(candidates, text[i:j+1])
	}
	for _, c := range candidates {
		r = delegateResult{}
		if json.Unmarshal([]byte(c), &r) == nil && r.Results != nil {
			return r, true
		}
	}
	return delegateResult{}, false
}

// section is one question of the merged answer.
type section struct {
	question string
	label    string
	child    *childResult // nil when the result has none for it
	findings []Finding
}

// merged is the answer built from the children's results.
type merged struct {
	sections []section
	omitted  []string // questions beyond maxQuestions, not delegated
	result   delegateResult
	raw      string // the tool's result when it is not JSON
	parsed   bool
}

// mergeResults pairs the questions with the children's results, by label
// and else by position, and takes each child's findings from its report.
func mergeResults(qs []string, raw string) merged {
	m := merged{}
	if len(qs) > maxQuestions {
		m.omitted = qs[maxQuestions:]
		qs = qs[:maxQuestions]
	}
	m.result, m.parsed = parseDelegateResult(raw)
	if !m.parsed {
		m.raw = raw
	}
	byLabel := make(map[string]int)
	for i, r := range m.result.Results {
		if _, ok := byLabel[r.Label]; !ok {
			byLabel[r.Label] = i
		}
	}
	if len(qs) == 0 && m.parsed {
		// The call was not this model's: name the sections by label.
		for i := range m.result.Results {
			c := &m.result.Results[i]
			m.sections = append(m.sections, section{question: c.Label, label: c.Label, child: c, findings: ParseFindings(c.Report)})
		}
		return m
	}
	for i, label := range labels(qs) {
		s := section{question: qs[i], label: label}
		j, ok := byLabel[label]
		if !ok && i < len(m.result.Results) {
			j, ok = i, true
		}
		if ok && m.parsed {
			s.child = &m.result.Results[j]
			s.findings = ParseFindings(s.child.Report)
		}
		m.sections = append(m.sections, s)
	}
	return m
}

// delegationDisclaimer is the first line of a merged answer.
func delegationDisclaimer(n int) string {
	return fmt.Sprintf("This is troupe's offline retrieval model, not a language model: it split the task mechanically "+
		"into %d %s, one per listed question, gave each to an explore agent and merged their findings below "+
		"without judging them. For real answers configure a model with `--model provider:model` "+
		"or the `TROUPE_MODEL` environment variable.", n, plural(n, "subtask", "subtasks"))
}

// render writes the merged answer with at most n findings per question.
func (m merged) render(n int) string {
	var b strings.Builder
	b.WriteString(delegationDisclaimer(len(m.sections)))
	b.WriteString("\n")
	if !m.parsed {
		b.WriteString("\nThe delegate tool's result could not be read as JSON, so there are no findings to merge. It said:\n\n")
		b.WriteString(fenced(truncate(m.raw, maxQuotedBytes)))
	} else {
		r := m.result
		total := r.Total
		if total == 0 {
			total = len(r.Results)
		}
		fmt.Fprintf(&b, "\nSubtasks: %d completed, %d partial, %d failed, of %d.\n", r.Completed, r.Partial, r.Failed, total)
	}
	if len(m.omitted) > 0 {
		fmt.Fprintf(&b, "\nOnly the first %d questions were delegated; not asked: %s.\n", maxQuestions, quoteList(m.omitted))
	}
	if !m.parsed {
		return b.String()
	}
	for i, s := range m.sections {
		fmt.Fprintf(&b, "\n## %d. %s\n\n", i+1, headingText(s.question))
		if s.child == nil {
			b.WriteString("The delegate tool's result has no entry for this question.\n")
			continue
		}
		c := s.child
		typ := c.Type
		if typ == "" {
			typ = "explore"
		}
		fmt.Fprintf(&b, "%s agent %s: %s", typ, codeSpan(s.label), orDash(c.Status))
		if c.Reason != "" {
			fmt.Fprintf(&b, " (%s)", c.Reason)
		}
		fmt.Fprintf(&b, ", %d %s, %d %s.\n", c.ToolCalls, plural(c.ToolCalls, "tool call", "tool calls"), c.Turns, plural(c.Turns, "turn", "turns"))
		if c.Error != "" {
			b.WriteString("\n")
			b.WriteString(fenced(truncate(c.Error, maxQuotedBytes)))
		}
		b.WriteString("\n")
		if len(s.findings) == 0 {
			b.WriteString("No findings.")
			if last := lastLine(c.Report); last != "" {
				b.WriteString(" The agent's report ends: ")
				b.WriteString(last)
			}
			b.WriteString("\n")
			continue
		}
		shown := s.findings[:min(len(s.findings), n)]
		for k, f := range shown {
			fmt.Fprintf(&b, "%d. %s", k+1, codeSpan(spanText(f.Path, f.Line, f.EndLine)))
			if f.Symbol != "" {
				b.WriteString(" in ")
				b.WriteString(codeSpan(snippetOf(f.Symbol)))
			}
			if f.Snippet != "" {
				b.WriteString(" — ")
				b.WriteString(codeSpan(snippetOf(f.Snippet)))
			}
			fmt.Fprintf(&b, " (relevance %.2f)\n", f.Relevance)
		}
		if omitted := len(s.findings) - len(shown); omitted > 0 {
			fmt.Fprintf(&b, "\n_%d more %s not shown._\n", omitted, plural(omitted, "finding", "findings"))
		}
	}
	return b.String()
}

// fit renders the merged answer within maxTokens (0: no limit), showing
// fewer findings per question until it fits; the first line always stays.
func (m merged) fit(maxTokens int) string {
	for n := maxMergedFindings; n >= 0; n-- {
		if s := m.render(n); maxTokens <= 0 || estimateTokens(len(s)) <= maxTokens {
			return s
		}
	}
	return delegationDisclaimer(len(m.sections)) + "\n"
}

// snippetOf trims a child's snippet for the merged answer.
func snippetOf(s string) string {
	s = snippet(s)
	if utf8.RuneCountInString(s) > maxMergedSnippet {
		rs := []rune(s)
		s = strings.TrimSpace(string(rs[:maxMergedSnippet-1])) + "…"
	}
	return s
}

// lastLine is the last line of a report with text, not a heading nor the
// offline model's first line, as a code span. It is asked of reports
// without findings only, so it holds no path:line reference.
func lastLine(report string) string {
	lines := strings.Split(report, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "#") || l == Disclaimer || fenceRe.MatchString(l) {
			continue
		}
		return codeSpan(snippetOf(l))
	}
	return ""
}

// fenced writes s as a fenced code block whose fence no line of s closes.
func fenced(s string) string {
	fence := "```"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + "\n" + strings.TrimRight(s, "\n") + "\n" + fence + "\n"
}

// truncate cuts s to at most n bytes, at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// headingText escapes the ':' and '#' of a question that holds a
// path:line reference, so that ParseFindings does not take the question
// for a finding of the merged answer; Markdown shows it unchanged.
func headingText(q string) string {
	if len(lineRefs(q)) == 0 {
		return q
	}
	return strings.NewReplacer(":", `\:`, "#", `\#`).Replace(q)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func quoteList(qs []string) string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = fmt.Sprintf("%q", q)
	}
	return strings.Join(out, ", ")
}
