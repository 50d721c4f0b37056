package script

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
)

// The script host speaks length-prefixed JSON over its standard input and
// output: a 4-byte big-endian length, then that many bytes of JSON. The
// host sends a request and waits for its response; one call at a time.

// maxFrame caps one message either way.
const maxFrame = 16 << 20

type request struct {
	Op   string   `json:"op"` // "load" or "call"
	Prog *Program `json:"prog"`
	Call *Call    `json:"call,omitempty"`
}

type response struct {
	Reply   Reply      `json:"reply"`
	Compile []srcError `json:"compile,omitempty"`
	// Fail says how the script failed (a panic, say); "" when it answered.
	Fail string `json:"fail,omitempty"`
	// Retire asks the host to stop this process: the script left
	// goroutines running, or grew it past its limits.
	Retire bool `json:"retire,omitempty"`
}

func writeFrame(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(data) > maxFrame {
		return fmt.Errorf("message of %d bytes is over the limit of %d", len(data), maxFrame)
	}
	buf := make([]byte, 4+len(data))
	binary.BigEndian.PutUint32(buf, uint32(len(data)))
	copy(buf[4:], data)
	_, err = w.Write(buf)
	return err
}

func readFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return fmt.Errorf("message of %d bytes is over the limit of %d", n, maxFrame)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
