package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/manager"
)

type progressKind int

const (
	progressNone progressKind = iota
	progressPlain
	progressLive // a terminal: plain lines, with colour unless NO_COLOR
	progressJSON
)

func progressMode(flag string, w io.Writer, getenv func(string) string) (progressKind, error) {
	switch flag {
	case "none":
		return progressNone, nil
	case "plain":
		return progressPlain, nil
	case "json":
		return progressJSON, nil
	case "auto", "":
		if isTerminal(w) && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb" {
			return progressLive, nil
		}
		return progressPlain, nil
	}
	return 0, usagef("--progress %q: use auto, plain, json or none", flag)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress renders the manager's events on stderr until the manager closes.
type progress struct {
	done chan struct{}
}

func startProgress(mgr *manager.Manager, mode progressKind, w io.Writer) *progress {
	p := &progress{done: make(chan struct{})}
	if mode == progressNone {
		close(p.done)
		return p
	}
	sub := mgr.Subscribe()
	go func() {
		defer close(p.done)
		enc := json.NewEncoder(w)
		streaming := false // a streamed line is open on a live display
		for e := range sub.C() {
			if mode == progressJSON {
				_ = enc.Encode(e)
				continue
			}
			if e.Kind == manager.EventModelDelta {
				if mode == progressLive {
					if !streaming {
						fmt.Fprintf(w, "  %s#%s ✎ ", e.Type, shortID(e.AgentID))
						streaming = true
					}
					fmt.Fprint(w, dim+strings.ReplaceAll(e.Text, "\n", " ")+reset)
				}
				continue
			}
			if streaming {
				fmt.Fprintln(w)
				streaming = false
			}
			if line := progressLine(e, mode == progressLive); line != "" {
				fmt.Fprintln(w, line)
			}
		}
		if streaming {
			fmt.Fprintln(w)
		}
	}()
	return p
}

func (p *progress) wait() { <-p.done }

const (
	dim   = "\x1b[2m"
	green = "\x1b[32m"
	red   = "\x1b[31m"
	reset = "\x1b[0m"
)

// progressLine renders one event, or "" for events not worth a line.
func progressLine(e manager.Event, colour bool) string {
	paint := func(c, s string) string {
		if !colour {
			return s
		}
		return c + s + reset
	}
	who := fmt.Sprintf("%s#%s", e.Type, shortID(e.AgentID))
	switch e.Kind {
	case manager.EventSpawned:
		return fmt.Sprintf("▸ %s started: %s", who, clip(e.Text, 100))
	case manager.EventModelCall:
		line := fmt.Sprintf("  %s turn %d: %d tokens in, %d out%s", who, e.Turn, e.Usage.InputTokens, e.Usage.OutputTokens, cost(e.Usage))
		return paint(dim, line)
	case manager.EventToolCall:
		return fmt.Sprintf("  %s → %s %s", who, e.Tool, clip(e.Args, 100))
	case manager.EventToolResult:
		if e.Error != "" {
			return paint(red, fmt.Sprintf("  %s ← %s error: %s", who, e.Tool, clip(e.Error, 120)))
		}
		return paint(dim, fmt.Sprintf("  %s ← %s %d lines, %d bytes", who, e.Tool, strings.Count(e.Text, "\n")+1, e.Size))
	case manager.EventNote:
		return fmt.Sprintf("  %s note: %s", who, clip(e.Text, 120))
	case manager.EventCompleted:
		if e.State == manager.Completed {
			return paint(green, fmt.Sprintf("✓ %s completed", who))
		}
		return paint(red, fmt.Sprintf("✗ %s %s (%s)", who, e.State, e.Reason))
	}
	return ""
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
