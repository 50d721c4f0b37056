//go:build unix

package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/troupe-dev/troupe/manager"
)

// TestApprovalOnATerminalStopsReadingWhenGivenUp: on a real terminal the
// read of an answer nobody types ends with the asker's context; nothing is
// left reading the terminal.
func TestApprovalOnATerminalStopsReadingWhenGivenUp(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := openPTY(t, 80)
	con := newConsole(p.tty, p.tty, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := (&app{}).approver(false, con)(ctx, approval)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run with --yes")
	con.close()
	out := p.output(t)
	assert.Contains(t, out, "Allow? [y/N] ")
}

// TestApprovalPausesTheLiveDisplay asks on the terminal the live tree is
// drawn on: the tree leaves the screen while the question is asked, and
// comes back below the question and its answer.
func TestApprovalPausesTheLiveDisplay(t *testing.T) {
	p := openPTY(t, 100)
	events := make(chan manager.Event)
	prog := showEvents(events, progressLive, p.tty, progressOptions{every: 5 * time.Millisecond, width: func() int { return termWidth(p.tty, 0) }})
	stages := review()
	for _, e := range stages[0] {
		events <- e
	}
	time.Sleep(30 * time.Millisecond) // drawn
	con := newConsole(p.tty, p.tty, prog.hold)
	answered := make(chan error, 1)
	go func() { answered <- (&app{}).approver(false, con)(context.Background(), approval) }()
	time.Sleep(50 * time.Millisecond) // the prompt is out; the display must stay off
	_, err := io.WriteString(p.ptmx, "y\n")
	require.NoError(t, err)
	select {
	case err := <-answered:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the answer was not read")
	}
	for _, stage := range stages[1:] {
		for _, e := range stage {
			events <- e
		}
	}
	close(events)
	prog.wait(context.Background())
	s := newScreen(t, 100)
	s.write(p.output(t))
	want := append([]string{"", "general#01234567 asks: " + approval.Summary, "Allow? [y/N] y"}, reviewScreen...)
	assert.Equal(t, want, s.text(), "no tree left above the question, nor drawn over it")
}
