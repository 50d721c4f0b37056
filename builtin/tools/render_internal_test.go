package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/troupe-dev/troupe/agenttypes"
)

func TestAChildsChangesAreShownWithHowToMergeThem(t *testing.T) {
	many := make([]string, 70)
	for i := range many {
		many[i] = fmt.Sprintf("gen/%02d.go", i)
	}
	rs := []agenttypes.ChildResult{
		{Label: "fix", ID: "id-1", Status: agenttypes.ChildOK, Report: "fixed", Changes: &agenttypes.Changes{
			Branch: "troupe/r/a", Added: []string{"new.go"}, Modified: []string{"f.go"}, Insertions: 12, Deletions: 3,
			Repo: "/state/repo", Patch: "/state/a.patch",
		}},
		{Label: "gen", ID: "id-2", Status: agenttypes.ChildOK, Report: "generated", Changes: &agenttypes.Changes{Added: many}},
		{Label: "look", ID: "id-3", Status: agenttypes.ChildOK, Report: "looked", Changes: &agenttypes.Changes{}},
	}
	md := renderResults(rs, "markdown")
	assert.Contains(t, md, `Changed 2 files (+12 −3) on its branch: added new.go; modified f.go; merge {"agent": "fix"} brings them into your workspace`)
	assert.NotContains(t, md, "/state/", "where troupe keeps things is not the model's business")
	section := md[strings.Index(md, "[look]"):]
	assert.NotContains(t, section, "Changed", "a child that changed nothing says nothing")

	var got struct {
		Results []resultJSON `json:"results"`
	}
	require.NoError(t, json.Unmarshal([]byte(renderResults(rs, "json")), &got))
	require.Len(t, got.Results, 3)
	assert.Equal(t, []string{"f.go"}, got.Results[0].Changes.Modified)
	assert.Len(t, got.Results[1].Changes.Added, maxChangedFiles, "a long list is cut")
	assert.Equal(t, 70, got.Results[1].Changes.Files, "and the count says how long it was")
	assert.Nil(t, got.Results[2].Changes)
}
