package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/agenttypes"
)

// changesSummary says, after a run, what it changed and how to look at,
// apply or drop it; "" when it changed nothing.
func changesSummary(id string, ch *agenttypes.Changes) string {
	var b strings.Builder
	if ch != nil && ch.IgnoredCount > 0 {
		fmt.Fprintf(&b, "not recorded: %s the agent left in its workspace that ignore rules keep out of git (%s)\n",
			plural(ch.IgnoredCount, "file", "files"), clip(strings.Join(ch.Ignored, ", "), 120))
	}
	if ch.Empty() {
		return strings.TrimSuffix(b.String(), "\n")
	}
	b.WriteString(diffstatLines(ch))
	fmt.Fprintf(&b, "your tree is untouched; 'troupe runs diff %s' shows the changes, 'troupe runs apply %s' applies them, 'troupe runs discard %s' drops them", id, id, id)
	return b.String()
}

// diffstatLines says what changes change: how many files and lines, on
// which branch, and git's diffstat, a line for each file.
func diffstatLines(ch *agenttypes.Changes) string {
	var b strings.Builder
	fmt.Fprintf(&b, "changed %s (+%d −%d) on branch %s:\n", plural(ch.Files(), "file", "files"), ch.Insertions, ch.Deletions, ch.Branch)
	if ch.Diffstat != "" {
		for _, line := range strings.Split(strings.TrimRight(ch.Diffstat, "\n"), "\n") {
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// writePatch copies a run's patch file to w. On a terminal, control
// characters in it are shown escaped: the patch holds what a model
// wrote, and escape sequences could hide lines from the reader or talk
// to the terminal.
func writePatch(w io.Writer, id string, ch *agenttypes.Changes, terminal bool) error {
	if ch.Empty() {
		return nil
	}
	f, err := os.Open(ch.Patch)
	if err != nil {
		return fmt.Errorf("run %s: its patch %s cannot be read (%w); 'troupe runs discard %s' removes what is left of it", id, ch.Patch, unwrapPath(err), id)
	}
	defer f.Close()
	if !terminal {
		_, err = io.Copy(w, f)
		return err
	}
	return copyShown(w, f)
}

// copyShown copies r to w with every control character but newline and
// tab written as an escape (\x1b), invalid UTF-8 included.
func copyShown(w io.Writer, r io.Reader) error {
	in, out := bufio.NewReader(r), bufio.NewWriter(w)
	for {
		c, size, err := in.ReadRune()
		if err == io.EOF {
			return out.Flush()
		}
		if err != nil {
			return err
		}
		switch {
		case c == '\n' || c == '\t':
			out.WriteRune(c)
		case c == utf8.RuneError && size == 1, c < 0x20, c >= 0x7f && c <= 0x9f:
			if c == utf8.RuneError {
				_ = in.UnreadRune()
				b, _ := in.ReadByte()
				c = rune(b)
			}
			fmt.Fprintf(out, "\\x%02x", c)
		default:
			out.WriteRune(c)
		}
	}
}
