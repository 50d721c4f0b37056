package trust_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/builtin/trust"
)

func items() []trust.Item {
	return []trust.Item{
		{Kind: trust.KindPlugin, Name: "evil", Path: ".troupe/plugins/troupe-plugin-evil", Digest: "aa"},
		{Kind: trust.KindScripts, Name: "hooked", Path: ".troupe/agents/hooked.yaml", Digest: "bb"},
		{Kind: trust.KindEndpoint, Name: "providers.openai.base_url", Path: ".troupe/config.yaml", Digest: "cc"},
	}
}

func TestConsentIsKeptPerProjectAndPinnedToContent(t *testing.T) {
	store := trust.Store{Path: filepath.Join(t.TempDir(), "state", "trusted.json")}
	project := t.TempDir()

	rec, err := store.Get(project)
	require.NoError(t, err)
	assert.Nil(t, rec, "nothing is trusted before the user says so")
	v := trust.Check(rec, items())
	assert.False(t, v.Trusted)
	assert.Len(t, v.New, 3)

	_, err = store.Trust(project, items())
	require.NoError(t, err)
	rec, err = store.Get(project)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.True(t, trust.Check(rec, items()).Trusted)
	assert.True(t, rec.Allows(trust.KindPlugin, "evil", "aa"))
	assert.False(t, rec.Allows(trust.KindPlugin, "evil", "ab"), "another binary is another thing")

	// A changed binary, and a plugin that was not there: neither is
	// trusted, and the verdict says which is which.
	now := items()
	now[0].Digest = "ab"
	now = append(now, trust.Item{Kind: trust.KindPlugin, Name: "other", Digest: "dd"})
	v = trust.Check(rec, now)
	assert.False(t, v.Trusted)
	require.Len(t, v.Changed, 1)
	assert.Equal(t, "evil", v.Changed[0].Name)
	require.Len(t, v.New, 1)
	assert.Equal(t, "other", v.New[0].Name)

	// What was removed takes no trust away from what is left.
	assert.True(t, trust.Check(rec, items()[1:]).Trusted)

	// Another project is another record.
	other, err := store.Get(t.TempDir())
	require.NoError(t, err)
	assert.Nil(t, other)

	fi, err := os.Stat(store.Path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the user's own state")
}

func TestAProjectIsOneRecordWhateverItsPathSays(t *testing.T) {
	store := trust.Store{Path: filepath.Join(t.TempDir(), "trusted.json")}
	project := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(project, link))
	_, err := store.Trust(link, items())
	require.NoError(t, err)
	rec, err := store.Get(filepath.Join(project, "sub", ".."))
	require.NoError(t, err)
	require.NotNil(t, rec)
	key, err := trust.ProjectKey(project)
	require.NoError(t, err)
	assert.Equal(t, key, rec.Project)
}

func TestRevokeAndList(t *testing.T) {
	store := trust.Store{Path: filepath.Join(t.TempDir(), "trusted.json")}
	a, b := t.TempDir(), t.TempDir()
	for _, p := range []string{a, b} {
		_, err := store.Trust(p, items())
		require.NoError(t, err)
	}
	list, err := store.List()
	require.NoError(t, err)
	assert.Len(t, list, 2)

	found, err := store.Revoke(a)
	require.NoError(t, err)
	assert.True(t, found)
	found, err = store.Revoke(a)
	require.NoError(t, err)
	assert.False(t, found, "revoking twice finds nothing the second time")
	rec, err := store.Get(a)
	require.NoError(t, err)
	assert.Nil(t, rec)
	rec, err = store.Get(b)
	require.NoError(t, err)
	assert.NotNil(t, rec)
}

func TestConcurrentTrustsLoseNoRecord(t *testing.T) {
	store := trust.Store{Path: filepath.Join(t.TempDir(), "trusted.json")}
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	for i := range dirs {
		dirs[i] = t.TempDir()
		wg.Go(func() {
			_, err := store.Trust(dirs[i], items())
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	list, err := store.List()
	require.NoError(t, err)
	assert.Len(t, list, len(dirs))
}

func TestAnUnusableStoreSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trusted.json")
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o600))
	_, err := trust.Store{Path: path}.Get(t.TempDir())
	require.ErrorIs(t, err, trust.ErrStore)
	assert.Contains(t, err.Error(), "move it away")

	_, err = trust.Store{Path: path}.Trust(t.TempDir(), items())
	require.ErrorIs(t, err, trust.ErrStore)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "{not json", string(data), "a refused change leaves the file as it was")
}

func TestDefaultPathIsTheUsersStateDirectory(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": "/state", "HOME": "/home/u"}
	p, err := trust.DefaultPath(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/state", "troupe", "trusted.json"), p)
	delete(env, "XDG_STATE_HOME")
	p, err = trust.DefaultPath(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/home/u", ".local", "state", "troupe", "trusted.json"), p)
}
