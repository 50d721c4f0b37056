package manager

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendEventJSON appends e as encoding/json would write it, byte for
// byte, without reflection: the transcript writer encodes every event, and
// encoding/json's reflection was most of its time. A test checks the two
// agree on every field.
func appendEventJSON(b []byte, e *Event) []byte {
	return appendEventJSONWith(b, e, nil, nil)
}

// appendEventJSONWith is appendEventJSON with the time's formatting
// cached in tc (nil: none), and the fields that name the event's agent
// given as ident, as appendEventIdent wrote them for an earlier event of
// the same agent (nil: written here).
func appendEventJSONWith(b []byte, e *Event, tc *timeCache, ident []byte) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"time":"`...)
	if tc != nil {
		b = tc.appendTime(b, e.Time)
	} else {
		b = e.Time.AppendFormat(b, time.RFC3339Nano)
	}
	b = append(b, `","kind":`...)
	b = appendJSONString(b, string(e.Kind))
	if ident != nil {
		b = append(b, ident...)
	} else {
		b = appendEventIdent(b, e)
	}
	if e.State != 0 {
		b = append(b, `,"state":`...)
		b = appendJSONString(b, e.State.String())
	}
	if e.From != 0 {
		b = append(b, `,"from":`...)
		b = appendJSONString(b, e.From.String())
	}
	if e.Turn != 0 {
		b = append(b, `,"turn":`...)
		b = strconv.AppendInt(b, int64(e.Turn), 10)
	}
	for _, f := range [...]struct{ name, value string }{
		{`,"tool":`, e.Tool}, {`,"tool_call_id":`, e.ToolCallID}, {`,"args":`, e.Args}, {`,"text":`, e.Text},
	} {
		if f.value != "" {
			b = append(b, f.name...)
			b = appendJSONString(b, f.value)
		}
	}
	if e.Size != 0 {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, int64(e.Size), 10)
	}
	if e.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, e.Error)
	}
	b = append(b, `,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(e.Usage.InputTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(e.Usage.OutputTokens), 10)
	if e.Usage.CostUSD != 0 {
		b = append(b, `,"cost_usd":`...)
		b = appendJSONFloat(b, e.Usage.CostUSD)
	}
	if e.Usage.Estimated {
		b = append(b, `,"estimated":true`...)
	}
	b = append(b, '}')
	return append(appendEventEnd(b, e), '}')
}

// appendEventIdent appends the fields that name the event's agent: its
// ID, parent, type, label, group and depth, the same for all its events.
func appendEventIdent(b []byte, e *Event) []byte {
	b = append(b, `,"agent":`...)
	b = appendJSONString(b, e.AgentID)
	if e.ParentID != "" {
		b = append(b, `,"parent":`...)
		b = appendJSONString(b, e.ParentID)
	}
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.Type)
	if e.Label != "" {
		b = append(b, `,"label":`...)
		b = appendJSONString(b, e.Label)
	}
	if e.Group != "" {
		b = append(b, `,"group":`...)
		b = appendJSONString(b, e.Group)
	}
	if e.Depth != 0 {
		b = append(b, `,"depth":`...)
		b = strconv.AppendInt(b, int64(e.Depth), 10)
	}
	return b
}

// timeCache formats times as RFC 3339 with nanoseconds, reusing what
// the last time's second and zone formatted to: events come many a
// second, and formatting the date was a good part of encoding one.
type timeCache struct {
	sec    int64
	loc    *time.Location
	prefix []byte // the date and time of day, to the second
	zone   []byte // "Z" or "+hh:mm"
}

func (c *timeCache) appendTime(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	if c.prefix == nil || sec != c.sec || loc != c.loc {
		whole := t.Truncate(time.Second).AppendFormat(nil, time.RFC3339Nano)
		end := bytes.IndexByte(whole, 'T') + len("15:04:05") + 1
		if end <= 0 || end > len(whole) {
			return t.AppendFormat(b, time.RFC3339Nano)
		}
		c.sec, c.loc, c.prefix, c.zone = sec, loc, whole[:end], whole[end:]
	}
	b = append(b, c.prefix...)
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, c.zone...)
}

// appendEventEnd appends the fields after usage.
func appendEventEnd(b []byte, e *Event) []byte {
	if e.Reason != "" {
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, string(e.Reason))
	}
	if e.Dropped != 0 {
		b = append(b, `,"dropped":`...)
		b = strconv.AppendInt(b, int64(e.Dropped), 10)
	}
	if e.Changes != nil {
		// Once per agent at most: reflection costs nothing here.
		if c, err := json.Marshal(e.Changes); err == nil {
			b = append(b, `,"changes":`...)
			b = append(b, c...)
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// plainJSON marks the ASCII bytes a JSON string holds as they are.
var plainJSON = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString quotes s as encoding/json does: control characters
// escaped, <, > and & escaped for HTML, invalid UTF-8 replaced by U+FFFD,
// and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainJSON[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONFloat writes f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, '0') // encoding/json refuses these; a cost is never one
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
