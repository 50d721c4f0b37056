package manager

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

// The transcript writer's encoder must write what encoding/json writes.
func TestEventJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"", "plain", "line\nbreak\ttab\rcr", `quote " back \ slash`, "<html> & </html>", "\x00\x01\x1f\x7f",
		"ünïcödé ✓ 日本", "bad \xff utf8 \xc3", "\u2028\u2029", "emoji 🎉", strings.Repeat("long ", 100)}
	pick := func() string {
		var b strings.Builder
		for range rng.IntN(3) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	kinds := []EventKind{EventSpawned, EventState, EventModelCall, EventToolCall, EventToolResult, EventCompleted, EventDropped}
	costs := []float64{0, 0.0005, 1.25, 1e-7, 3e-12, 123456789.5, 2e21, 0.1 + 0.2}
	var tc timeCache
	for i := range 5000 {
		e := Event{
			Seq: rng.Uint64() >> uint(rng.IntN(64)), Time: time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(time.FixedZone("z", rng.IntN(20)*1800-18000)),
			Kind: kinds[rng.IntN(len(kinds))], AgentID: pick(), ParentID: pick(), Type: pick(), Label: pick(), Group: pick(),
			Depth: rng.IntN(3), State: State(rng.IntN(int(numStates))), From: State(rng.IntN(int(numStates))), Turn: rng.IntN(4),
			Tool: pick(), ToolCallID: pick(), Args: pick(), Text: pick(), Size: rng.IntN(3) * 1000, Error: pick(),
			Usage:  Usage{InputTokens: rng.IntN(3) * 17, OutputTokens: rng.IntN(3) * 5, CostUSD: costs[rng.IntN(len(costs))]},
			Reason: Reason(pick()), Dropped: rng.IntN(2) * 9,
		}
		if rng.IntN(4) == 0 {
			e.Changes = &agenttypes.Changes{Branch: pick(), Base: pick(), Head: pick(), Added: []string{pick()}, Insertions: rng.IntN(9), Diffstat: pick()}
		}
		want, err := json.Marshal(&e)
		require.NoError(t, err)
		got := appendEventJSON(nil, &e)
		require.Equal(t, string(want), string(got), "event %d", i)
		cached := appendEventJSONWith(nil, &e, &tc, nil)
		require.Equal(t, string(want), string(cached), "event %d, its time formatted through the cache", i)
		// As an agent writes its events: the fields that name it encoded
		// once, for an event of its own of another kind.
		ident := appendEventIdent(nil, &Event{Kind: EventNote, AgentID: e.AgentID, ParentID: e.ParentID, Type: e.Type, Label: e.Label, Group: e.Group, Depth: e.Depth})
		require.Equal(t, string(want), string(appendEventJSONWith(nil, &e, &tc, ident)), "event %d, its agent's fields encoded once", i)
		// The next event, often in the same second and zone, as a run's are.
		e.Time = e.Time.Add(time.Duration(rng.IntN(3)) * time.Duration(rng.Int64N(int64(time.Second))))
		want, err = json.Marshal(&e)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendEventJSONWith(nil, &e, &tc, nil)), "event %d, a little later", i)
	}
}

func BenchmarkEventJSON(b *testing.B) {
	e := Event{Seq: 42, Time: time.Now(), Kind: EventToolResult, AgentID: "0b8e0f6e-4b0e-4c47-9a55-9b0b6f1f0c3a", Type: "explore",
		Tool: "grep", ToolCallID: "call_1_0", Text: strings.Repeat("cart/cart.go:40: func applyDiscount\n", 20), Size: 700, State: Running}
	b.Run("encoding/json", func(b *testing.B) {
		for range b.N {
			_, _ = json.Marshal(&e)
		}
	})
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for range b.N {
			buf = appendEventJSON(buf[:0], &e)
		}
	})
	// As the transcript writer encodes: the time's date and zone cached.
	b.Run("append-cached-time", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		var tc timeCache
		for range b.N {
			buf = appendEventJSONWith(buf[:0], &e, &tc, nil)
		}
	})
	// And as an agent's events are encoded: its fields encoded once.
	b.Run("append-cached-agent", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		var tc timeCache
		ident := appendEventIdent(nil, &e)
		for range b.N {
			buf = appendEventJSONWith(buf[:0], &e, &tc, ident)
		}
	})
}
