package tools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/agenttypes"
)

// Caps on what the results of delegate and collect put in front of the
// parent model: each report, and all reports of one result together, so
// that a result of eight long reports still fits a model's context.
const (
	reportCap       = 24 << 10
	reportsTotalCap = 88 << 10 // with headings, the whole result stays under about 96 KiB
	errorCap        = 2 << 10
)

// treeTool is a builtin tool that acts on the agent tree through
// agenttypes.Env.Tree.
type treeTool struct {
	spec agenttypes.ToolSpec
	run  func(ctx context.Context, env *agenttypes.Env, args json.RawMessage) (string, error)
}

func (t *treeTool) Spec() agenttypes.ToolSpec { return t.spec }

func (t *treeTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	env := agenttypes.EnvFrom(ctx)
	if env.Tree == nil {
		return "", fmt.Errorf("%s works only inside an agent run by a manager", t.spec.Name)
	}
	return t.run(ctx, env, args)
}

func newTreeTool(name, description, params string, readOnly bool, run func(context.Context, *agenttypes.Env, json.RawMessage) (string, error)) *treeTool {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(params)); err != nil {
		panic("tools: bad schema for " + name + ": " + err.Error())
	}
	return &treeTool{
		spec: agenttypes.ToolSpec{
			Name:        name,
			Description: description,
			Parameters:  json.RawMessage(buf.Bytes()),
			ReadOnly:    readOnly,
		},
		run: run,
	}
}

// checkFormat validates a "return" argument.
func checkFormat(f string) (string, error) {
	switch f {
	case "", "markdown":
		return "markdown", nil
	case "json":
		return "json", nil
	}
	return "", fmt.Errorf(`return is %q; use "markdown" (the default) or "json"`, f)
}

// counts tallies results by status.
type counts struct {
	Completed int `json:"completed"`
	Partial   int `json:"partial"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Running   int `json:"running,omitempty"`
	Total     int `json:"total"`
}

func countResults(rs []agenttypes.ChildResult) counts {
	c := counts{Total: len(rs)}
	for _, r := range rs {
		switch r.Status {
		case agenttypes.ChildOK:
			c.Completed++
		case agenttypes.ChildPartial:
			c.Partial++
		case agenttypes.ChildCancelled:
			c.Cancelled++
		case agenttypes.ChildRunning:
			c.Running++
		default:
			c.Failed++
		}
	}
	return c
}

// headline is "Subagents complete: N/M", with the statuses other than ok
// in brackets when there are any.
func (c counts) headline() string {
	s := fmt.Sprintf("Subagents complete: %d/%d", c.Completed, c.Total)
	var rest []string
	for _, p := range []struct {
		n    int
		name string
	}{{c.Partial, "partial"}, {c.Failed, "failed"}, {c.Cancelled, "cancelled"}, {c.Running, "running"}} {
		if p.n > 0 {
			rest = append(rest, fmt.Sprintf("%d %s", p.n, p.name))
		}
	}
	if len(rest) > 0 {
		s += " (" + strings.Join(rest, ", ") + ")"
	}
	return s
}

// resultJSON is one result as the json return format has it: the fields
// of agenttypes.ChildResult, the duration in milliseconds, and whether the
// report was cut.
type resultJSON struct {
	Label      string                 `json:"label"`
	ID         string                 `json:"id"`
	Type       string                 `json:"type"`
	Model      string                 `json:"model"`
	Status     agenttypes.ChildStatus `json:"status"`
	Reason     string                 `json:"reason,omitempty"`
	Usage      agenttypes.Usage       `json:"usage"`
	ToolCalls  int                    `json:"tool_calls"`
	Turns      int                    `json:"turns"`
	DurationMS int64                  `json:"duration_ms"`
	Report     string                 `json:"report"`
	ReportCut  bool                   `json:"report_cut,omitempty"`
	Error      string                 `json:"error,omitempty"`
	Changes    *changesJSON           `json:"changes,omitempty"`
}

// changesJSON is what a child changed, as its parent's model reads it:
// the files by kind (at most maxChangedFiles of each) and the line
// counts; merge brings them in.
type changesJSON struct {
	Branch     string   `json:"branch"`
	Added      []string `json:"added,omitempty"`
	Modified   []string `json:"modified,omitempty"`
	Deleted    []string `json:"deleted,omitempty"`
	Insertions int      `json:"insertions"`
	Deletions  int      `json:"deletions"`
	// Files counts them all, when the lists are cut.
	Files int `json:"files"`
}

// maxChangedFiles bounds each list of changed files a parent is shown.
const maxChangedFiles = 50

func changesOf(ch *agenttypes.Changes) *changesJSON {
	if ch.Empty() {
		return nil
	}
	first := func(paths []string) []string { return paths[:min(len(paths), maxChangedFiles)] }
	return &changesJSON{
		Branch: ch.Branch, Added: first(ch.Added), Modified: first(ch.Modified), Deleted: first(ch.Deleted),
		Insertions: ch.Insertions, Deletions: ch.Deletions, Files: ch.Files(),
	}
}

// writeChanges says in one line what a child changed and how to bring it
// in.
func writeChanges(b *strings.Builder, label string, ch *agenttypes.Changes) {
	c := changesOf(ch)
	if c == nil {
		return
	}
	fmt.Fprintf(b, "Changed %s (+%d −%d) on its branch:", plural(c.Files, "file", "files"), c.Insertions, c.Deletions)
	for _, kind := range []struct {
		name  string
		paths []string
	}{{"added", c.Added}, {"modified", c.Modified}, {"deleted", c.Deleted}} {
		if len(kind.paths) > 0 {
			fmt.Fprintf(b, " %s %s;", kind.name, strings.Join(kind.paths, ", "))
		}
	}
	fmt.Fprintf(b, " merge {\"agent\": %q} brings them into your workspace\n", label)
}

// shownReport is a report as it will be shown: cut to its share of the
// caps, with the marker that says so.
type shownReport struct {
	text string
	cut  bool
}

// fitReports cuts each report to at most reportCap bytes, and all of them
// together to reportsTotalCap: a report shorter than its fair share keeps
// all of it, and what it leaves over goes to the longer ones.
func fitReports(rs []agenttypes.ChildResult) []shownReport {
	order := make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(rs[a].Report), len(rs[b].Report)) })
	caps := make([]int, len(rs))
	left := reportsTotalCap
	for k, i := range order {
		share := left / (len(order) - k)
		caps[i] = min(len(rs[i].Report), share, reportCap)
		left -= caps[i]
	}
	out := make([]shownReport, len(rs))
	for i, r := range rs {
		out[i] = cutReport(r.Report, caps[i], r.ID)
	}
	return out
}

// cutReport returns report whole when it fits in limit bytes, else its
// first limit bytes or less (at a line end when one is near, never inside
// a UTF-8 sequence) followed by a marker naming the agent whose result
// holds all of it.
func cutReport(report string, limit int, id string) shownReport {
	if len(report) <= limit {
		return shownReport{text: report}
	}
	n := limit
	for n > 0 && !utf8.RuneStart(report[n]) {
		n--
	}
	if nl := strings.LastIndexByte(report[:n], '\n'); nl > 0 && nl >= n-1024 {
		n = nl
	}
	kept := strings.TrimRight(report[:n], " \t\r\n")
	marker := fmt.Sprintf("[report cut at %s of %s. The full report is the result of agent %s: `troupe runs show %s` on the command line, Manager.Wait(ctx, %q) from Go. To get more of it here, delegate with resume: %q and ask for the part you need.]",
		size(len(kept)), size(len(report)), id, id, id, id)
	return shownReport{text: kept + "\n\n" + marker, cut: true}
}

// size writes a byte count the way the markers do: "512 bytes",
// "24 KiB", "80.3 KiB".
func size(n int) string {
	if n < 1024 {
		return strconv.Itoa(n) + " bytes"
	}
	return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1024, 'f', 1, 64), ".0") + " KiB"
}

// tokens writes a token count short: 950, 1.2k, 45k, 1.3M.
func tokens(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n)
	case n < 10_000:
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1000, 'f', 1, 64), ".0") + "k"
	case n < 1_000_000:
		return strconv.Itoa((n+500)/1000) + "k"
	}
	return strings.TrimSuffix(strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64), ".0") + "M"
}

// duration writes a run's wall time: 42ms, 2.1s, 1m32s.
func duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// cutError bounds an error text, which comes from the child's model or
// tools and could be long.
func cutError(s string) string {
	if len(s) <= errorCap {
		return s
	}
	n := errorCap
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf(" [... %s more]", size(len(s)-n))
}

// writeSections writes one Markdown section per result, in the order
// given.
func writeSections(b *strings.Builder, rs []agenttypes.ChildResult) {
	shown := fitReports(rs)
	for i, r := range rs {
		status := string(r.Status)
		if r.Reason != "" && r.Reason != "done" && r.Reason != status {
			status += " (" + r.Reason + ")"
		}
		fmt.Fprintf(b, "\n## [%s] %s — %s, model %s, %s in / %s out", r.Label, status, r.Type, r.Model,
			tokens(r.Usage.InputTokens), tokens(r.Usage.OutputTokens))
		if c := r.Usage.CostUSD; c >= 0.0001 {
			fmt.Fprintf(b, ", $%.4f", c)
		} else if c > 0 {
			b.WriteString(", < $0.0001")
		}
		fmt.Fprintf(b, ", %s, %s, %s\n", plural(r.ToolCalls, "tool call", "tool calls"), plural(r.Turns, "turn", "turns"), duration(r.Duration))
		fmt.Fprintf(b, "Agent ID: %s\n", r.ID)
		if r.Error != "" {
			fmt.Fprintf(b, "Error: %s\n", cutError(r.Error))
		}
		writeChanges(b, r.Label, r.Changes)
		b.WriteString("\n")
		switch {
		case r.Status == agenttypes.ChildRunning:
			b.WriteString("(still running)\n")
		case strings.TrimSpace(r.Report) == "":
			b.WriteString("(no report)\n")
		default:
			b.WriteString(strings.TrimRight(shown[i].text, "\n"))
			b.WriteString("\n")
		}
	}
}

// jsonResults turns results into their json form, reports cut to the
// caps.
func jsonResults(rs []agenttypes.ChildResult) []resultJSON {
	shown := fitReports(rs)
	out := make([]resultJSON, len(rs))
	for i, r := range rs {
		out[i] = resultJSON{
			Label: r.Label, ID: r.ID, Type: r.Type, Model: r.Model,
			Status: r.Status, Reason: r.Reason, Usage: r.Usage,
			ToolCalls: r.ToolCalls, Turns: r.Turns, DurationMS: r.Duration.Milliseconds(),
			Report: shown[i].text, ReportCut: shown[i].cut, Error: cutError(r.Error),
			Changes: changesOf(r.Changes),
		}
	}
	return out
}

// marshal writes v as indented JSON; the values given here always
// marshal.
func marshal(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic("tools: " + err.Error())
	}
	return string(b)
}

// renderResults writes the results of a parallel delegate call.
func renderResults(rs []agenttypes.ChildResult, format string) string {
	c := countResults(rs)
	if format == "json" {
		return marshal(struct {
			counts
			Results []resultJSON `json:"results"`
		}{c, jsonResults(rs)})
	}
	var b strings.Builder
	b.WriteString("# " + c.headline() + "\n")
	writeSections(&b, rs)
	return strings.TrimRight(b.String(), "\n")
}

// renderStarted writes what a background delegate call returns.
func renderStarted(resp *agenttypes.DelegateResponse, format string) string {
	children := resp.Children
	if children == nil {
		children = []agenttypes.ChildRef{}
	}
	if format == "json" {
		return marshal(struct {
			Group string                `json:"group"`
			Tasks []agenttypes.ChildRef `json:"tasks"`
		}{resp.Group, children})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Started group %s with %s:\n", resp.Group, plural(len(children), "subagent", "subagents"))
	for _, c := range children {
		fmt.Fprintf(&b, "- [%s] %s\n", c.Label, c.ID)
	}
	fmt.Fprintf(&b, "Call collect with group %q to get their results (wait up to 600 seconds for them), or with cancel: true to stop them.", resp.Group)
	return b.String()
}

// renderCollected writes what collect returns.
func renderCollected(resp *agenttypes.CollectResponse, format string, cancelled bool) string {
	c := countResults(resp.Results)
	if format == "json" {
		return marshal(struct {
			Group string `json:"group"`
			Done  bool   `json:"done"`
			counts
			Running int          `json:"running"` // shown even when 0, unlike in counts
			Results []resultJSON `json:"results"`
		}{resp.Group, resp.Done, c, c.Running, jsonResults(resp.Results)})
	}
	var b strings.Builder
	state := "done"
	if !resp.Done {
		state = "still running"
	}
	fmt.Fprintf(&b, "# Group %s %s — %s\n", resp.Group, state, c.headline())
	if cancelled {
		b.WriteString("You cancelled the children that were still running.\n")
	}
	if !resp.Done {
		var running []string
		for _, r := range resp.Results {
			if r.Status == agenttypes.ChildRunning {
				running = append(running, fmt.Sprintf("[%s] %s", r.Label, r.ID))
			}
		}
		fmt.Fprintf(&b, "Still running: %s. Call collect again for the rest (with wait, up to 600 seconds, to wait for them), or with cancel: true to stop them.\n",
			strings.Join(running, ", "))
	}
	writeSections(&b, resp.Results)
	return strings.TrimRight(b.String(), "\n")
}
