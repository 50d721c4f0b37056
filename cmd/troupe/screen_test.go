//go:build unix

package main

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// screen interprets what a program wrote to a terminal, as far as the
// live display needs: text, carriage return, newline, and the controls
// it emits (cursor to a previous line, erase line, erase below, colours).
// Anything else fails the test, so a control the display starts using
// must be taught here first.
type screen struct {
	t     *testing.T
	lines [][]rune
	row   int
	col   int
	// width is the terminal's width: a line written past it would wrap
	// and break the redraw in place, so it fails the test.
	width int
}

func newScreen(t *testing.T, width int) *screen {
	return &screen{t: t, lines: [][]rune{nil}, width: width}
}

func (s *screen) write(out string) {
	s.t.Helper()
	r := []rune(out)
	for i := 0; i < len(r); i++ {
		switch c := r[i]; c {
		case '\r':
			s.col = 0
		case '\n':
			s.row++
			if s.row == len(s.lines) {
				s.lines = append(s.lines, nil)
			}
		case '\x1b':
			j := i + 1
			require.Less(s.t, j, len(r), "escape at the end")
			require.Equal(s.t, '[', r[j], "only CSI sequences")
			j++
			start := j
			for j < len(r) && (r[j] >= '0' && r[j] <= '9' || r[j] == ';') {
				j++
			}
			require.Less(s.t, j, len(r), "unfinished control")
			param := string(r[start:j])
			s.control(r[j], param)
			i = j
		default:
			line := s.lines[s.row]
			for len(line) < s.col {
				line = append(line, ' ')
			}
			if s.col < len(line) {
				line[s.col] = c
			} else {
				line = append(line, c)
			}
			s.col++
			require.LessOrEqual(s.t, s.col, s.width, "line %d runs past the terminal's width: %q", s.row, string(line))
			s.lines[s.row] = line
		}
	}
}

func (s *screen) control(final rune, param string) {
	s.t.Helper()
	n := 1
	if param != "" && !strings.Contains(param, ";") {
		v, err := strconv.Atoi(param)
		require.NoError(s.t, err)
		n = v
	}
	switch final {
	case 'F': // cursor to the start of the line n up
		s.row = max(s.row-n, 0)
		s.col = 0
	case 'A':
		s.row = max(s.row-n, 0)
	case 'K':
		require.Equal(s.t, "2", param, "only erase-whole-line")
		s.lines[s.row] = nil
	case 'J': // erase from the cursor to the end of the screen
		require.Equal(s.t, "", param)
		if s.col < len(s.lines[s.row]) {
			s.lines[s.row] = s.lines[s.row][:s.col]
		}
		s.lines = s.lines[:s.row+1]
	case 'm': // colours: no effect on the text
	default:
		s.t.Fatalf("the screen does not know the control %q with %q", string(final), param)
	}
}

// text is the screen as lines, trailing blanks removed.
func (s *screen) text() []string {
	var out []string
	for _, l := range s.lines {
		out = append(out, strings.TrimRight(string(l), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// ptyPair opens a pseudo-terminal of the given width: tty is the side a
// program writes to and reads from, read returns what it wrote so far
// once the tty is closed.
type ptyPair struct {
	ptmx, tty *os.File
	got       chan []byte
}

func openPTY(t *testing.T, cols int) *ptyPair {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	require.NoError(t, pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(cols), Rows: 50}))
	p := &ptyPair{ptmx: ptmx, tty: tty, got: make(chan []byte, 1)}
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, ptmx) // ends with EIO when the tty side closes
		p.got <- b.Bytes()
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
	})
	return p
}

// output closes the program's side and returns everything it wrote.
func (p *ptyPair) output(t *testing.T) string {
	t.Helper()
	require.NoError(t, p.tty.Close())
	select {
	case b := <-p.got:
		return string(b)
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal's output never ended")
		return ""
	}
}
