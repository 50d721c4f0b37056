package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeAnswersEveryRequestPipedBeforeItsInputEnds: a client that
// pipes its requests and closes its end (printf ... | troupe mcp serve)
// gets an answer to each, a tool call's included, before troupe exits.
func TestServeAnswersEveryRequestPipedBeforeItsInputEnds(t *testing.T) {
	env := servedEnv(t, "TROUPE_MODEL=offline")
	requests := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"explore","arguments":{"task":"ChargeWithRetry"}}}`,
	}, "\n") + "\n"
	cmd := exec.Command(troupeBinary(t), "mcp", "serve", "--repo", shop)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(requests)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())

	answered := map[string]json.RawMessage{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &msg), sc.Text())
		if msg.ID != nil {
			require.Nil(t, msg.Error, sc.Text())
			answered[string(msg.ID)] = msg.Result
		}
	}
	require.Contains(t, answered, "1")
	require.Contains(t, answered, "2", "tools/list answered; stderr:\n%s", stderr.String())
	require.Contains(t, answered, `"three"`, "the tool call answered; stderr:\n%s", stderr.String())
	assert.Contains(t, string(answered[`"three"`]), "ChargeWithRetry")
}

// TestPipedSessionHoldsTheEndOfItsInputUntilEveryRequestIsAnswered: the
// end of the input is held back while a request read is unanswered, and
// given once its answer is written; an answer's ID may be spelt another
// way (3.0 for 3).
func TestPipedSessionHoldsTheEndOfItsInputUntilEveryRequestIsAnswered(t *testing.T) {
	var out bytes.Buffer
	p := newPipedSession(context.Background(), strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call"}`+"\n"), &out)
	buf := make([]byte, 256)
	n, err := p.Read(buf)
	require.NoError(t, err)
	require.Positive(t, n)
	ended := make(chan error, 1)
	go func() {
		_, err := p.Read(buf)
		ended <- err
	}()
	_, err = p.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}` + "\n"))
	require.NoError(t, err)
	select {
	case err := <-ended:
		t.Fatalf("the input ended (%v) with a request unanswered", err)
	default:
	}
	_, err = p.Write([]byte(`{"jsonrpc":"2.0","id":3.0,`))
	require.NoError(t, err)
	_, err = p.Write([]byte(`"result":{}}` + "\n"))
	require.NoError(t, err)
	assert.ErrorIs(t, <-ended, io.EOF)
}

// TestPipedSessionGivesUpWaitingWithItsContext: an answer that never
// comes holds the end of the input only until the context ends.
func TestPipedSessionGivesUpWaitingWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := newPipedSession(ctx, strings.NewReader(`[{"jsonrpc":"2.0","id":"a","method":"tools/list"}]`+"\n"), io.Discard)
	buf := make([]byte, 256)
	_, err := p.Read(buf)
	require.NoError(t, err)
	ended := make(chan error, 1)
	go func() {
		_, err := p.Read(buf)
		ended <- err
	}()
	cancel()
	assert.ErrorIs(t, <-ended, io.EOF)
}
