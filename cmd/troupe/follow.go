package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/troupe-dev/troupe/builtin/fsroot"
	"github.com/troupe-dev/troupe/manager"
)

// maxEventLine bounds one line of a transcript being followed: a line
// longer than this is not an event troupe wrote, and following stops.
const maxEventLine = 16 << 20

// followEvery is how often a followed transcript is read again when it
// had nothing new: a person is watching, so a tenth of a second is
// prompt enough, and polling needs nothing from the platform.
const followEvery = 100 * time.Millisecond

// follower reads a transcript while its run writes it.
type follower struct {
	path string
	// alive reports whether a process still writes the transcript;
	// following ends at the first end of file after it says no.
	alive func(path string) bool
	every time.Duration
}

// follow sends the transcript's events on the returned channel as they
// are written, from the first, and closes it when the run has ended and
// every line it wrote was sent, or when ctx ends. What ended it early
// (an unreadable file, a line that is not an event) is sent on errc,
// which is then closed too.
func (fl follower) follow(ctx context.Context) (<-chan manager.Event, <-chan error) {
	events := make(chan manager.Event, 64)
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		defer close(events)
		if err := fl.run(ctx, events); err != nil {
			errc <- err
		}
	}()
	return events, errc
}

func (fl follower) run(ctx context.Context, events chan<- manager.Event) error {
	f, fi, err := fsroot.OpenRegular(nil, fl.path)
	if errors.Is(err, fsroot.ErrNotRegular) {
		return fmt.Errorf("%s is not a regular file (a %s); a transcript is a JSON-lines file", fl.path, fsroot.Kind(fi.Mode()))
	}
	if err != nil {
		return err
	}
	defer f.Close()
	every := fl.every
	if every <= 0 {
		every = followEvery
	}
	wait := time.NewTimer(every)
	defer wait.Stop()
	r := bufio.NewReaderSize(f, 64<<10)
	var partial []byte // a line read before its end was written
	line := 0
	for ended := false; ; {
		chunk, err := r.ReadSlice('\n')
		partial = append(partial, chunk...)
		switch {
		case err == nil:
			line++
			if e, ok, derr := decodeEvent(partial); derr != nil {
				return fmt.Errorf("%s:%d: %w", fl.path, line, derr)
			} else if ok {
				select {
				case events <- e:
				case <-ctx.Done():
					return nil
				}
			}
			partial = partial[:0]
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			if len(partial) > maxEventLine {
				return fmt.Errorf("%s:%d: a line of over %d MiB is not an event troupe writes", fl.path, line+1, maxEventLine>>20)
			}
			continue
		case !errors.Is(err, io.EOF):
			return err
		}
		// At the end of what is written. The run is asked whether it still
		// writes before the last read, so nothing written before it ended
		// is missed; a line it left unfinished is a torn last write.
		if ended {
			return nil
		}
		ended = !fl.alive(fl.path)
		if ended {
			continue
		}
		wait.Reset(every)
		select {
		case <-wait.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// decodeEvent reads one line; a blank one is no event.
func decodeEvent(line []byte) (manager.Event, bool, error) {
	var e manager.Event
	if len(bytes.TrimSpace(line)) == 0 {
		return e, false, nil
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return e, false, err
	}
	return e, true, nil
}
