package tools

import (
	"fmt"
	"path/filepath"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/fsroot"
)

// agentRoot opens the directory the calling agent works in, env.Dir. In
// a workspace, that directory may be below the workspace's top, and a
// command run in the workspace may have replaced it (with a symlink to
// the user's home, say): it is then opened from the top, which no
// command can replace, and refused unless it is still a real directory
// inside. An agent without a workspace reads its directory as it is.
func agentRoot(env *agenttypes.Env) (*fsroot.Root, error) {
	if ws := env.Workspace; ws != nil {
		if sub, ok := below(ws.Top(), env.Dir); ok {
			return fsroot.OpenBeneath(ws.Top(), sub)
		}
	}
	return fsroot.Open(env.Dir)
}

// workspaceRoot opens the agent's directory in its workspace, ws.Dir(),
// from the workspace's top, as agentRoot does.
func workspaceRoot(ws agenttypes.Workspace) (*fsroot.Root, error) {
	sub, ok := below(ws.Top(), ws.Dir())
	if !ok {
		return nil, fmt.Errorf("the workspace's directory %s is not inside its top %s; this workspace cannot be written safely", ws.Dir(), ws.Top())
	}
	return fsroot.OpenBeneath(ws.Top(), sub)
}

// below returns dir relative to top when dir is top or inside it,
// lexically.
func below(top, dir string) (string, bool) {
	if top == "" || dir == "" || !filepath.IsAbs(top) || !filepath.IsAbs(dir) {
		return "", false
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", false
	}
	return rel, true
}
