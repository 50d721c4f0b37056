package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/manager"
)

// treeView is the live display: one line per agent of the tree, children
// under their parent, redrawn in place. It is not safe for concurrent
// use; progress serialises it.
type treeView struct {
	w     io.Writer
	opt   progressOptions
	nodes map[string]*treeNode
	roots []*treeNode
	// drawn is how many lines of the display are on the screen, above
	// the cursor.
	drawn int
	dirty bool
}

type treeNode struct {
	id, parent, typ, label string
	depth                  int
	state                  manager.State
	reason                 manager.Reason
	ended                  bool
	// activity is what the agent does now: a tool call, streamed text,
	// a question.
	activity string
	toolCall string // the ID of the tool call shown
	streamed string // the tail of the text streaming in
	usage    manager.Usage
	sawCalls bool // usage comes from model calls
	// writing holds the path of each write or edit call under way;
	// changed the paths they changed, until the agent's end gives its
	// changes (files).
	writing  map[string]string
	changed  map[string]bool
	files    int
	children []*treeNode
}

func newTreeView(w io.Writer, opt progressOptions) *treeView {
	if opt.maxAgents <= 0 {
		opt.maxAgents = liveMaxAgents
	}
	if opt.width == nil {
		opt.width = func() int { return liveWidthNoTerm }
	}
	return &treeView{w: w, opt: opt, nodes: map[string]*treeNode{}}
}

// node returns the agent of e, adding it (under its parent, when the
// parent is known) the first time: an agent whose spawned event was
// dropped still gets its line.
func (v *treeView) node(e manager.Event) *treeNode {
	if n := v.nodes[e.AgentID]; n != nil {
		if n.label == "" {
			n.label = e.Label
		}
		return n
	}
	n := &treeNode{id: e.AgentID, parent: e.ParentID, typ: e.Type, label: e.Label, depth: e.Depth, state: manager.Pending}
	v.nodes[n.id] = n
	if p := v.nodes[e.ParentID]; p != nil && e.ParentID != "" {
		n.depth = p.depth + 1
		p.children = append(p.children, n)
	} else {
		v.roots = append(v.roots, n)
	}
	return n
}

// apply takes one event into the tree.
func (v *treeView) apply(e manager.Event) {
	if e.AgentID == "" {
		return // EventDropped: the tree catches up from later events
	}
	n := v.node(e)
	v.dirty = true
	switch e.Kind {
	case manager.EventSpawned, manager.EventState:
		n.state = e.State
	case manager.EventModelDelta:
		n.streamed = tail(n.streamed+e.Text, 200)
		n.activity = "✎ " + n.streamed
	case manager.EventModelCall:
		n.usage = n.usage.Add(e.Usage)
		n.sawCalls = true
		n.streamed, n.activity = "", ""
	case manager.EventToolCall:
		n.activity = "→ " + strings.TrimSpace(e.Tool+" "+toolArg(e.Args))
		n.toolCall = e.ToolCallID
		n.noteWrite(e)
	case manager.EventToolResult:
		if e.ToolCallID == n.toolCall {
			n.activity = ""
		}
		n.noteWritten(e)
	case manager.EventQuestion:
		n.activity = "? asks: " + e.Text
	case manager.EventAnswer:
		n.activity = ""
	case manager.EventCompleted:
		n.state, n.reason, n.ended, n.activity = e.State, e.Reason, true, ""
		if !n.sawCalls {
			n.usage = e.Usage
		}
		if e.Changes != nil {
			n.files = e.Changes.Files()
		}
	}
	if n.state == manager.Pending && e.Kind != manager.EventSpawned && e.Kind != manager.EventState && !n.ended {
		n.state = manager.Running // its state change was not seen
	}
}

// noteWrite remembers the path of a write or edit call under way.
func (n *treeNode) noteWrite(e manager.Event) {
	if e.Tool != "write" && e.Tool != "edit" {
		return
	}
	var args struct{ Path string }
	if json.Unmarshal([]byte(e.Args), &args) != nil || args.Path == "" {
		return
	}
	if n.writing == nil {
		n.writing = map[string]string{}
	}
	n.writing[e.ToolCallID] = path.Clean(filepath.ToSlash(args.Path))
}

// noteWritten counts the path of a write or edit call that succeeded.
func (n *treeNode) noteWritten(e manager.Event) {
	path, ok := n.writing[e.ToolCallID]
	if !ok {
		return
	}
	delete(n.writing, e.ToolCallID)
	if e.Error != "" {
		return
	}
	if n.changed == nil {
		n.changed = map[string]bool{}
	}
	n.changed[path] = true
	n.files = len(n.changed)
}

// tail keeps the last n runes of s, on one line.
func tail(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[len(r)-n:])
	}
	return s
}

// toolArg picks what a tool call is about from its JSON arguments: the
// path, pattern or command it names, how many tasks it hands out, or
// else the arguments themselves.
func toolArg(args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return clip(args, 40)
	}
	if tasks, ok := m["tasks"].([]any); ok {
		if len(tasks) == 1 {
			return "1 task"
		}
		return fmt.Sprintf("%d tasks", len(tasks))
	}
	for _, k := range []string{"path", "pattern", "command", "query", "question", "group", "text"} {
		if s, ok := m[k].(string); ok && s != "" {
			return clip(s, 40)
		}
	}
	return clip(args, 40)
}

// order lists the agents in tree order, parents before their children.
func (v *treeView) order() []*treeNode {
	var out []*treeNode
	var walk func(ns []*treeNode)
	walk = func(ns []*treeNode) {
		for _, n := range ns {
			out = append(out, n)
			walk(n.children)
		}
	}
	walk(v.roots)
	return out
}

// lines renders the tree: at most opt.maxAgents agents (top-level agents
// first, then those still running, then those that ended), then a line
// counting the rest. Each line fits in width columns.
func (v *treeView) lines(width int) []string {
	all := v.order()
	shown := all
	if len(all) > v.opt.maxAgents {
		rank := func(n *treeNode) int {
			switch {
			case n.parent == "" || v.nodes[n.parent] == nil:
				return 0
			case !n.ended:
				return 1
			}
			return 2
		}
		byRank := slices.Clone(all)
		slices.SortStableFunc(byRank, func(a, b *treeNode) int { return rank(a) - rank(b) })
		keep := map[*treeNode]bool{}
		for _, n := range byRank[:v.opt.maxAgents] {
			keep[n] = true
		}
		shown = slices.DeleteFunc(slices.Clone(all), func(n *treeNode) bool { return !keep[n] })
	}
	names := make([]string, len(shown))
	col := 0
	for i, n := range shown {
		names[i] = strings.Repeat("  ", n.depth) + n.name()
		col = max(col, utf8.RuneCountInString(names[i]))
	}
	out := make([]string, 0, len(shown)+1)
	for i, n := range shown {
		pad := strings.Repeat(" ", col-utf8.RuneCountInString(names[i]))
		out = append(out, v.line(names[i]+pad+"  ", n, width))
	}
	if hidden := len(all) - len(shown); hidden > 0 {
		more := fmt.Sprintf("… %d more", hidden)
		if v.opt.colour {
			more = dim + more + reset
		}
		out = append(out, more)
	}
	return out
}

func (n *treeNode) name() string {
	switch {
	case n.label != "":
		return "[" + n.label + "]"
	case n.parent != "":
		return n.typ + "#" + shortID(n.id)
	}
	return n.typ
}

// line renders one agent: its name, what it does or how it ended, and its
// usage, clipped to width with the colour added after clipping.
func (v *treeView) line(name string, n *treeNode, width int) string {
	var mark, status, colour string
	switch {
	case n.ended && n.state == manager.Completed:
		mark, status, colour = "✓", "complete", green
	case n.ended && isBudget(n.reason):
		mark, status, colour = "⚠", "partial: "+string(n.reason), yellow
	case n.ended && n.state == manager.Cancelled:
		mark, status, colour = "✗", "cancelled", red
	case n.ended:
		mark, status, colour = "✗", "failed: "+string(n.reason), red
	case n.state == manager.Pending:
		mark, status = "·", "pending"
	case n.activity != "":
		status = n.activity
	default:
		mark, status = "…", "thinking"
	}
	head := name
	if mark != "" {
		head += mark + " "
	}
	var use string
	if u := n.usage; u.InputTokens > 0 || u.OutputTokens > 0 {
		use = fmt.Sprintf(" (in=%s out=%s", compact(u.InputTokens), compact(u.OutputTokens))
		if u.CostUSD > 0 {
			use += fmt.Sprintf(" $%.4f", u.CostUSD)
		}
		use += ")"
	}
	if n.files > 0 {
		use += " · " + plural(n.files, "file", "files") + " changed"
	}
	// The usage gives way first, then the status, then the name.
	room := width - 1 - utf8.RuneCountInString(head) - utf8.RuneCountInString(use)
	if room < 16 {
		use = ""
		room = width - 1 - utf8.RuneCountInString(head)
	}
	if room < 8 {
		return clipRunes(head+status, width-1)
	}
	status = clipRunes(status, room)
	if !v.opt.colour {
		return head + status + use
	}
	if mark != "" && colour != "" {
		head = name + colour + mark + reset + " "
	}
	if use != "" {
		use = dim + use + reset
	}
	return head + status + use
}

func isBudget(r manager.Reason) bool {
	return strings.HasPrefix(string(r), "budget_")
}

// clipRunes shortens s to n runes, marking the cut.
func clipRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// compact writes a count as people read it: 420, 3.1k, 45k, 1.2M.
func compact(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 10_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1000), ".0") + "k"
	case n < 1_000_000:
		return fmt.Sprintf("%dk", n/1000)
	case n < 10_000_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	}
	return fmt.Sprintf("%dM", n/1_000_000)
}

// The few terminal controls the display uses.
const (
	eraseLine  = "\x1b[2K"
	eraseBelow = "\x1b[J"
)

// up moves the cursor to the start of the line n lines up.
func up(n int) string { return fmt.Sprintf("\x1b[%dF", n) }

// draw replaces the display on the screen with the tree as it is now.
func (v *treeView) draw() {
	var b strings.Builder
	if v.drawn > 0 {
		b.WriteString(up(v.drawn))
	}
	lines := v.lines(v.opt.width())
	for _, l := range lines {
		b.WriteString(eraseLine)
		b.WriteString(l)
		b.WriteString("\n")
	}
	b.WriteString(eraseBelow)
	_, _ = io.WriteString(v.w, b.String())
	v.drawn = len(lines)
	v.dirty = false
}

// erase takes the display off the screen, leaving the cursor where it
// began, so something else can be written there; the next draw puts it
// back below.
func (v *treeView) erase() {
	if v.drawn == 0 {
		return
	}
	_, _ = io.WriteString(v.w, up(v.drawn)+eraseBelow)
	v.drawn = 0
}
