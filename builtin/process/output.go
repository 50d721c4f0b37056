package process

import (
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"
)

// cappedOutput keeps the head and the tail of what is written to it,
// together at most max bytes, and counts what it cuts between them.
type cappedOutput struct {
	mu      sync.Mutex
	headMax int
	tailMax int
	head    []byte
	// tail holds the latest bytes after the head, up to twice tailMax
	// before it is cut back to tailMax.
	tail  []byte
	total int64
}

func newCappedOutput(max int) *cappedOutput {
	return &cappedOutput{headMax: max / 2, tailMax: max - max/2}
}

// Write keeps p's bytes that belong to the head or may belong to the
// tail; it never fails.
func (o *cappedOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := len(p)
	o.total += int64(n)
	if room := o.headMax - len(o.head); room > 0 {
		k := min(room, len(p))
		o.head = append(o.head, p[:k]...)
		p = p[k:]
	}
	if len(p) >= o.tailMax {
		o.tail = append(o.tail[:0], p[len(p)-o.tailMax:]...)
		return n, nil
	}
	o.tail = append(o.tail, p...)
	if len(o.tail) > 2*o.tailMax {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-o.tailMax:]...)
	}
	return n, nil
}

// String is the output kept: everything when it fits, else the head, a
// line saying how many bytes were cut, and the tail, cut so that no
// character is split.
func (o *cappedOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.total <= int64(o.headMax+o.tailMax) {
		return string(o.head) + string(o.tail)
	}
	head := o.head[:runeStartBefore(o.head)]
	tail := o.tail[len(o.tail)-o.tailMax:]
	for i := 0; i < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	cut := o.total - int64(len(head)) - int64(len(tail))
	sep := ""
	if len(head) > 0 && head[len(head)-1] != '\n' {
		sep = "\n"
	}
	return fmt.Sprintf("%s%s[... %s bytes of output cut ...]\n%s", head, sep, strconv.FormatInt(cut, 10), tail)
}

// runeStartBefore is the length of b without an incomplete character at
// its end.
func runeStartBefore(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}
