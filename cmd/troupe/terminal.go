package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/troupe-dev/troupe/manager"
)

// fdOf returns the file descriptor behind a stream, seeing through
// wrappers such as lockedWriter.
func fdOf(v any) (uintptr, bool) {
	for {
		switch s := v.(type) {
		case interface{ Fd() uintptr }:
			return s.Fd(), true
		case interface{ Unwrap() io.Writer }:
			v = s.Unwrap()
		default:
			return 0, false
		}
	}
}

// isTerminal reports whether v (stdin, stderr) is a terminal.
func isTerminal(v any) bool {
	fd, ok := fdOf(v)
	return ok && term.IsTerminal(int(fd))
}

// termWidth is the width of the terminal w writes to, or def.
func termWidth(w io.Writer, def int) int {
	if fd, ok := fdOf(w); ok {
		if width, _, err := term.GetSize(int(fd)); err == nil && width > 0 {
			return width
		}
	}
	return def
}

// Bounds on what is read from the user.
const (
	// maxAnswer is the longest answer kept, in bytes; a terminal's line
	// discipline holds no longer a line anyway.
	maxAnswer = 4096
	// maxDiscard is how much of an over-long line is read and thrown
	// away, so its rest is not taken for the next answer.
	maxDiscard = 64 << 10
	// approvalTimeout bounds how long a delegation waits for a y or n.
	approvalTimeout = 5 * time.Minute
)

// errNoAnswer is returned when the input ends before an answer.
var errNoAnswer = errors.New("no answer: the input ended")

// console asks the user on a terminal: a question or an approval at a
// time, written to out, answered with a line read from in. Several agents
// may ask at once; they take turns. While it asks, hold pauses the
// progress display so the question stays readable.
type console struct {
	mu   sync.Mutex // one question at a time
	in   io.Reader
	out  io.Writer
	hold func() (resume func())

	// A line being read. The read goes on when the asker gives up (its
	// context ends) and the input cannot be interrupted; the next
	// question then takes the line it reads.
	readMu  sync.Mutex
	reading chan lineResult
}

type lineResult struct {
	line string
	err  error
}

func newConsole(in io.Reader, out io.Writer, hold func() func()) *console {
	if hold == nil {
		hold = func() func() { return func() {} }
	}
	return &console{in: in, out: out, hold: hold}
}

// ask writes prompt and returns the line answered, without its newline,
// or an error when ctx ends or the input does first.
func (c *console) ask(ctx context.Context, prompt string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return "", err
	}
	resume := c.hold()
	defer resume()
	fmt.Fprint(c.out, prompt)
	ch := c.startRead()
	select {
	case r := <-ch:
		c.readDone()
		return r.line, r.err
	case <-ctx.Done():
		fmt.Fprintln(c.out)
		c.interrupt(ch)
		return "", ctx.Err()
	}
}

func (c *console) startRead() chan lineResult {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.reading == nil {
		ch := make(chan lineResult, 1)
		c.reading = ch
		go func() { ch <- readLine(c.in) }()
	}
	return c.reading
}

func (c *console) readDone() {
	c.readMu.Lock()
	c.reading = nil
	c.readMu.Unlock()
}

// interrupt stops the read on ch when the input allows it (a terminal
// opened for polling); otherwise the read goes on for the next question.
func (c *console) interrupt(ch chan lineResult) {
	d, ok := c.in.(interface{ SetReadDeadline(time.Time) error })
	if !ok || d.SetReadDeadline(time.Now()) != nil {
		return
	}
	<-ch
	c.readDone()
	_ = d.SetReadDeadline(time.Time{})
}

// close ends a read still going when it can, so nothing outlives the run
// that can be stopped.
func (c *console) close() {
	c.readMu.Lock()
	ch := c.reading
	c.readMu.Unlock()
	if ch != nil {
		c.interrupt(ch)
	}
}

// readLine reads one line from r, a byte at a time so nothing past the
// newline is consumed: at most maxAnswer bytes are kept, and the rest of
// a longer line, up to maxDiscard, is read and dropped.
func readLine(r io.Reader) lineResult {
	var line []byte
	var b [1]byte
	for n := 0; n < maxAnswer+maxDiscard; n++ {
		k, err := r.Read(b[:])
		if k == 1 {
			if b[0] == '\n' {
				return lineResult{line: strings.TrimRight(string(line), "\r")}
			}
			if len(line) < maxAnswer {
				line = append(line, b[0])
			}
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(line) > 0 {
					return lineResult{line: string(line)}
				}
				err = errNoAnswer
			}
			return lineResult{err: err}
		}
	}
	return lineResult{line: string(line)}
}

// Refusals of a delegation, as the parent model reads them.
const (
	needsApproval = "delegation needs approval: run with --yes to allow subagents without asking"
	userRefused   = "the user refused the delegation; do the work yourself or ask differently"
)

// approver returns the Config.ApproveDelegation of a run: --yes approves,
// a terminal asks the user, and anything else refuses.
func (a *app) approver(yes bool, con *console) func(context.Context, manager.Approval) error {
	switch {
	case yes:
		return func(context.Context, manager.Approval) error { return nil }
	case con == nil:
		return func(context.Context, manager.Approval) error { return errors.New(needsApproval) }
	}
	return func(ctx context.Context, req manager.Approval) error {
		ctx, cancel := context.WithTimeout(ctx, approvalTimeout)
		defer cancel()
		prompt := fmt.Sprintf("\n%s asks: %s\nAllow? [y/N] ", who(req.Parent.Type, req.Parent.ID, req.Parent.Label), req.Summary)
		answer, err := con.ask(ctx, prompt)
		if err != nil {
			return fmt.Errorf("%s (nobody approved it: %v)", needsApproval, err)
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
			return nil
		}
		return errors.New(userRefused)
	}
}

// asker returns the Config.AskUser of a run: on a terminal the user is
// asked; without one nobody answers, and the child is told so.
func (a *app) asker(con *console) func(context.Context, manager.QuestionInfo) (string, error) {
	if con == nil {
		return nil
	}
	return func(ctx context.Context, q manager.QuestionInfo) (string, error) {
		var b strings.Builder
		fmt.Fprintf(&b, "\n? %s asks: %s\n", who(q.From.Type, q.From.ID, q.From.Label), strings.TrimSpace(q.Question.Text))
		for i, s := range q.Question.Suggestions {
			fmt.Fprintf(&b, "  %d) %s\n", i+1, clip(s, 200))
		}
		if len(q.Question.Suggestions) > 0 {
			b.WriteString("answer (a number, or your own words; empty for none): ")
		} else {
			b.WriteString("answer (empty for none): ")
		}
		answer, err := con.ask(ctx, b.String())
		if err != nil {
			return "", nil // the child is told nobody answered
		}
		return pickAnswer(answer, q.Question.Suggestions), nil
	}
}

// pickAnswer turns what the user typed into the answer: the number of a
// suggestion stands for it, anything else is the answer itself.
func pickAnswer(typed string, suggestions []string) string {
	typed = strings.TrimSpace(typed)
	if n, err := strconv.Atoi(typed); err == nil && n >= 1 && n <= len(suggestions) {
		return suggestions[n-1]
	}
	return typed
}

// who names an agent for a person: its label when it has one, and its
// type and short ID.
func who(typ, id, label string) string {
	s := fmt.Sprintf("%s#%s", typ, shortID(id))
	if label != "" {
		s = "[" + label + "] " + s
	}
	return s
}
