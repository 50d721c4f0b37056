package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/manager"
)

type progressKind int

const (
	progressNone  progressKind = iota
	progressPlain              // a line per event
	progressLive               // a terminal: the tree of agents, redrawn in place
	progressJSON               // the events as JSON lines
)

// progressMode chooses the display: the flag, or for auto the live tree
// on a terminal and plain lines elsewhere.
func progressMode(flag string, w io.Writer, getenv func(string) string, terminal func(any) bool) (progressKind, error) {
	switch flag {
	case "none":
		return progressNone, nil
	case "plain":
		return progressPlain, nil
	case "json":
		return progressJSON, nil
	case "auto", "":
		if terminal(w) && getenv("TERM") != "dumb" {
			return progressLive, nil
		}
		return progressPlain, nil
	}
	return 0, usagef("--progress %q: use auto, plain, json or none", flag)
}

// progress renders the manager's events on stderr until the manager closes.
type progress struct {
	done chan struct{}
	// mu is held while the display writes; hold takes it away from the
	// display while someone asks the user something.
	mu   sync.Mutex
	tree *treeView // the live display, or nil
}

// progressOptions says how events are shown.
type progressOptions struct {
	colour bool
	// width is the terminal's width for the live display: called at
	// every redraw, so a resized terminal is followed.
	width func() int
	// every is the least time between two redraws of the live display.
	every time.Duration
	// maxAgents is how many agents the live display shows.
	maxAgents int
}

const (
	redrawEvery     = 100 * time.Millisecond
	liveMaxAgents   = 20
	liveWidthNoTerm = 100
)

// startProgress shows mgr's events until it closes.
func startProgress(mgr *manager.Manager, mode progressKind, w io.Writer, opt progressOptions) *progress {
	if mode == progressNone {
		p := &progress{done: make(chan struct{})}
		close(p.done)
		return p
	}
	return showEvents(mgr.Subscribe().C(), mode, w, opt)
}

// showEvents shows the events from c until it closes.
func showEvents(c <-chan manager.Event, mode progressKind, w io.Writer, opt progressOptions) *progress {
	p := &progress{done: make(chan struct{})}
	switch mode {
	case progressJSON:
		go p.json(c, w)
	case progressPlain:
		go p.plain(c, w, opt.colour)
	case progressLive:
		if opt.every <= 0 {
			opt.every = redrawEvery
		}
		p.tree = newTreeView(w, opt)
		go p.live(c, opt.every)
	default:
		close(p.done)
	}
	return p
}

// wait returns when every event was shown.
// A manager whose Close gave up on agents that ignore cancellation never
// closes the events; ctx bounds the wait for that case.
func (p *progress) wait(ctx context.Context) {
	select {
	case <-p.done:
	case <-ctx.Done():
	}
}

// hold stops the display from writing until resume is called, and takes
// the live display off the screen meanwhile.
func (p *progress) hold() (resume func()) {
	p.mu.Lock()
	if p.tree != nil {
		p.tree.erase()
	}
	return func() {
		if p.tree != nil {
			p.tree.dirty = true
		}
		p.mu.Unlock()
	}
}

func (p *progress) json(c <-chan manager.Event, w io.Writer) {
	defer close(p.done)
	enc := json.NewEncoder(w)
	for e := range c {
		p.mu.Lock()
		_ = enc.Encode(e)
		p.mu.Unlock()
	}
}

func (p *progress) plain(c <-chan manager.Event, w io.Writer, colour bool) {
	defer close(p.done)
	for e := range c {
		if line := progressLine(e, colour); line != "" {
			p.mu.Lock()
			fmt.Fprintln(w, line)
			p.mu.Unlock()
		}
	}
}

// live keeps the tree up to date with every event and redraws it at
// most once per every, and once more, whole, when the events end.
func (p *progress) live(c <-chan manager.Event, every time.Duration) {
	defer close(p.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case e, ok := <-c:
			if !ok {
				p.mu.Lock()
				p.tree.draw()
				p.mu.Unlock()
				return
			}
			p.mu.Lock()
			p.tree.apply(e)
			p.mu.Unlock()
		case <-tick.C:
			p.mu.Lock()
			if p.tree.dirty {
				p.tree.draw()
			}
			p.mu.Unlock()
		}
	}
}

const (
	dim    = "\x1b[2m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	reset  = "\x1b[0m"
)

// progressLine renders one event as a plain line, or "" for events not
// worth one. A child's lines are indented by its depth and name its label.
func progressLine(e manager.Event, colour bool) string {
	paint := func(c, s string) string {
		if !colour {
			return s
		}
		return c + s + reset
	}
	name := who(e.Type, e.AgentID, e.Label)
	var line string
	switch e.Kind {
	case manager.EventSpawned:
		line = fmt.Sprintf("▸ %s started: %s", name, clip(e.Text, 100))
	case manager.EventModelCall:
		line = paint(dim, fmt.Sprintf("  %s turn %d: %d tokens in, %d out%s", name, e.Turn, e.Usage.InputTokens, e.Usage.OutputTokens, cost(e.Usage)))
	case manager.EventToolCall:
		line = fmt.Sprintf("  %s → %s %s", name, e.Tool, clip(e.Args, 100))
	case manager.EventToolResult:
		if e.Error != "" {
			line = paint(red, fmt.Sprintf("  %s ← %s error: %s", name, e.Tool, clip(e.Error, 120)))
		} else {
			line = paint(dim, fmt.Sprintf("  %s ← %s %d lines, %d bytes", name, e.Tool, strings.Count(e.Text, "\n")+1, e.Size))
		}
	case manager.EventNote:
		line = fmt.Sprintf("  %s note: %s", name, clip(e.Text, 120))
	case manager.EventQuestion:
		line = fmt.Sprintf("  %s ? asks: %s", name, clip(e.Text, 120))
	case manager.EventAnswer:
		if strings.TrimSpace(e.Text) == "" {
			line = fmt.Sprintf("  %s ! nobody answered", name)
		} else {
			line = fmt.Sprintf("  %s ! answer from %s: %s", name, orDash(e.Tool), clip(e.Text, 120))
		}
	case manager.EventGroupDone:
		line = fmt.Sprintf("  %s group %s done", name, e.Group)
	case manager.EventBudgetExceeded:
		line = paint(yellow, fmt.Sprintf("  %s ⚠ over its token budget with its final answer (kept)", name))
	case manager.EventSettled:
		line = paint(dim, fmt.Sprintf("  %s settled: its subagents have ended; %d tokens in, %d out in all%s", name, e.Usage.InputTokens, e.Usage.OutputTokens, cost(e.Usage)))
	case manager.EventDropped:
		return paint(dim, fmt.Sprintf("… %d progress events not shown: the display fell behind", e.Dropped))
	case manager.EventCompleted:
		if e.State == manager.Completed {
			line = paint(green, fmt.Sprintf("✓ %s completed", name))
		} else {
			line = paint(red, fmt.Sprintf("✗ %s %s (%s)", name, e.State, e.Reason))
		}
		if n := e.Changes.Files(); n > 0 {
			line += fmt.Sprintf(" · %s changed", plural(n, "file", "files"))
		}
	default:
		return ""
	}
	return strings.Repeat("  ", max(e.Depth, 0)) + line
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// clip shortens s to n runes on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// cost renders a known cost, or nothing.
func cost(u manager.Usage) string {
	if u.CostUSD <= 0 {
		return ""
	}
	return fmt.Sprintf(", $%.4f", u.CostUSD)
}
