package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

const (
	readDefaultLimit = 2000
	// readMaxOutput caps what one call returns, whatever limit says.
	readMaxOutput = 256 << 10
	// readMaxLine cuts very long lines (minified code) so one line cannot
	// eat the whole output.
	readMaxLine = 2000
	// readBinaryProbe: a NUL byte this early means a binary file.
	readBinaryProbe = 8 << 10
)

const readDescription = `Read a text file and return its lines numbered like cat -n: the line number right-aligned in 6 columns, a tab, then the line.

Reads up to limit lines (default 2000) starting at line offset (1-based, default 1), and at most 256 KiB per call; when more follows, the last line says which offset to read from next. Lines longer than 2000 characters are cut. Binary files are refused. Paths are relative to the root.`

const readParams = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File to read, relative to the root."},
    "offset": {"type": "integer", "minimum": 1, "description": "First line to read, 1-based. Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to read. Default 2000."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

// Read returns the read tool. See the package documentation for its output.
func Read() agenttypes.Tool {
	return newTool("read", readDescription, readParams, runRead)
}

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

func runRead(ctx context.Context, root *fsroot.Root, raw json.RawMessage) (string, error) {
	var a readArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if a.Path == "" {
		return "", errors.New(`missing "path": give the file to read, relative to the root`)
	}
	if a.Offset < 0 || a.Limit < 0 {
		return "", fmt.Errorf("offset and limit must be positive (offset is the 1-based first line), got offset=%d limit=%d", a.Offset, a.Limit)
	}
	a.Offset = max(a.Offset, 1)
	if a.Limit == 0 {
		a.Limit = readDefaultLimit
	}
	rel, err := root.Resolve(a.Path)
	if err != nil {
		return "", err
	}
	f, fi, err := root.OpenFile(rel)
	if err != nil {
		return "", err
	}
	defer f.Close()

	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(readBinaryProbe)
	if bytes.IndexByte(head, 0) >= 0 {
		return "", fmt.Errorf("%s is a binary file (%d bytes); read shows text files only", rel, fi.Size())
	}
	if len(head) == 0 {
		return "(empty file)", nil
	}

	var out []byte
	lineNo := 0
	for {
		if lineNo&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		line, full, err := readLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", rel, err)
		}
		lineNo++
		if lineNo < a.Offset {
			continue
		}
		if lineNo >= a.Offset+a.Limit {
			out = fmt.Appendf(out, "... more lines follow; continue with offset=%d", lineNo)
			return string(out), nil
		}
		start := len(out)
		out = fmt.Appendf(out, "%6d\t", lineNo)
		out = append(out, line...)
		if full > len(line) {
			out = append(out, " [... "...)
			out = strconv.AppendInt(out, int64(full-len(line)), 10)
			out = append(out, " more bytes]"...)
		}
		out = append(out, '\n')
		if len(out) > readMaxOutput && lineNo > a.Offset {
			out = fmt.Appendf(out[:start], "... output truncated at %d KiB; continue with offset=%d", readMaxOutput>>10, lineNo)
			return string(out), nil
		}
	}
	if lineNo < a.Offset {
		return "", fmt.Errorf("offset %d is past the end of %s, which has %d lines", a.Offset, rel, lineNo)
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// readLine returns the next line without its line ending, cut to
// readMaxLine bytes at a rune boundary, and the line's full length.
func readLine(br *bufio.Reader) (line []byte, full int, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		full += len(chunk)
		if room := readMaxLine + 1 - len(buf); room > 0 {
			buf = append(buf, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && full > 0:
			err = nil
		case err != nil:
			return nil, 0, err
		}
		if bytes.HasSuffix(chunk, []byte("\n")) {
			buf, full = bytes.TrimSuffix(buf, []byte("\n")), full-1
			if bytes.HasSuffix(chunk, []byte("\r\n")) {
				buf, full = bytes.TrimSuffix(buf, []byte("\r")), full-1
			}
		}
		if len(buf) > readMaxLine {
			cut := readMaxLine
			for cut > 0 && !utf8.RuneStart(buf[cut]) {
				cut--
			}
			buf = buf[:cut]
		}
		return buf, full, nil
	}
}
