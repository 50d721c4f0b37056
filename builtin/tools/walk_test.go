package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

func walkTree(t *testing.T, n int) *fsroot.Root {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("e%d", i%4), fmt.Sprintf("f%d", i))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("f1*\n/d2/\n"), 0o644))
	root, err := fsroot.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	return root
}

func TestWalkVisitsEveryFileOnce(t *testing.T) {
	root := walkTree(t, 500)
	for _, workers := range []int{1, 2, 8} {
		var mu sync.Mutex
		var got []string
		_, err := walk(context.Background(), root, ".", walkOptions{workers: workers}, func(_ int, e walkEntry) {
			mu.Lock()
			got = append(got, e.rel)
			mu.Unlock()
		})
		require.NoError(t, err)
		sort.Strings(got)
		var want []string
		for i := range 500 {
			name := fmt.Sprintf("f%d", i)
			if i%3 == 2 || name[:2] == "f1" {
				continue
			}
			want = append(want, fmt.Sprintf("d%d/e%d/%s", i%3, i%4, name))
		}
		want = append(want, ".gitignore")
		sort.Strings(want)
		assert.Equal(t, want, got, "workers=%d", workers)
	}
}

func TestWalkDescendFilter(t *testing.T) {
	root := walkTree(t, 20)
	var n atomic.Int32
	_, err := walk(context.Background(), root, ".", walkOptions{workers: 2, descend: func(rel string) bool { return rel == "d0" }},
		func(_ int, e walkEntry) { n.Add(1) })
	require.NoError(t, err)
	assert.Equal(t, int32(1), n.Load(), "only .gitignore: d0's subdirectories are not entered")
}

func TestWalkStopsWhenCancelled(t *testing.T) {
	root := walkTree(t, 2000)
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	_, err := walk(ctx, root, ".", walkOptions{workers: 4}, func(_ int, e walkEntry) {
		if n.Add(1) == 10 {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, n.Load(), int32(200))
}

func TestWalkRecoversWorkerPanic(t *testing.T) {
	root := walkTree(t, 500)
	for _, workers := range []int{1, 4} {
		_, err := walk(context.Background(), root, ".", walkOptions{workers: workers}, func(_ int, e walkEntry) {
			if e.name == "f7" {
				panic("boom in visit")
			}
		})
		require.ErrorIs(t, err, errWalkPanic, "workers=%d", workers)
		assert.Contains(t, err.Error(), "boom in visit")
	}
}

// A panic in a walk worker reaches grep's, glob's and symbols' callers as the
// tool's error; the process carries on.
func TestFileToolsRecoverWalkPanic(t *testing.T) {
	root := walkTree(t, 200)
	walkDirHook = func(rel string) {
		if rel == "d1/e1" {
			panic("boom in a worker")
		}
	}
	t.Cleanup(func() { walkDirHook = nil })
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: root.Dir()})
	for _, tc := range []struct {
		tool agenttypes.Tool
		args string
	}{
		{Grep(), `{"pattern":"x"}`},
		{Glob(), `{"pattern":"**/f*"}`},
		{Symbols(), `{}`},
	} {
		_, err := tc.tool.Call(ctx, json.RawMessage(tc.args))
		require.ErrorIs(t, err, errWalkPanic, tc.tool.Spec().Name)
		assert.Contains(t, err.Error(), "boom in a worker")
		assert.True(t, strings.HasPrefix(err.Error(), tc.tool.Spec().Name+": internal error"), err.Error())
	}
}

// deepTree makes levels nested directories d/d/d/... with a file
// "hit.txt" holding "needle" at depths 1, 256 (the deepest searched) and
// levels.
func deepTree(t *testing.T, levels int) string {
	t.Helper()
	dir := t.TempDir()
	p := dir
	for i := 1; i <= levels; i++ {
		p = filepath.Join(p, "d")
		require.NoError(t, os.Mkdir(p, 0o755))
		if i == 1 || i == walkMaxDepth || i == levels {
			require.NoError(t, os.WriteFile(filepath.Join(p, "hit.txt"), []byte("needle\n"), 0o644))
		}
	}
	return dir
}

func TestWalkDepthLimit(t *testing.T) {
	dir := deepTree(t, walkMaxDepth+5)
	ctx := agenttypes.WithEnv(context.Background(), &agenttypes.Env{Dir: dir})
	deep := strings.Repeat("d/", walkMaxDepth) + "hit.txt"

	out, err := Grep().Call(ctx, json.RawMessage(`{"pattern":"needle"}`))
	require.NoError(t, err)
	assert.Equal(t, deep+":1:needle\nd/hit.txt:1:needle\n"+
		"... 1 directory more than 256 levels below the path was not searched", out)

	out, err = Glob().Call(ctx, json.RawMessage(`{"pattern":"**/hit.txt"}`))
	require.NoError(t, err)
	lines := strings.Split(out, "\n")
	require.Len(t, lines, 3, out)
	assert.ElementsMatch(t, []string{"d/hit.txt", deep}, lines[:2])
	assert.Equal(t, "... 1 directory more than 256 levels below the path was not listed", lines[2])

	out, err = Grep().Call(ctx, json.RawMessage(`{"pattern":"nothing-here"}`))
	require.NoError(t, err)
	assert.Equal(t, "no matches\n... 1 directory more than 256 levels below the path was not searched", out)

	// The limit counts from the path searched: five levels down, nothing
	// is left out.
	out, err = Grep().Call(ctx, json.RawMessage(`{"pattern":"needle","path":"d/d/d/d/d"}`))
	require.NoError(t, err)
	assert.NotContains(t, out, "levels")
	assert.Contains(t, out, strings.Repeat("d/", walkMaxDepth+5)+"hit.txt:1:needle")
}
