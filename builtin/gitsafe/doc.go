// Package gitsafe runs git on a repository that troupe does not trust,
// so that nothing the repository configures runs and nothing outside it
// is read. The git tool reads through it; workspaces write through it
// (worktree add, add, commit-tree, merge-tree, update-ref, read-tree).
//
// A repository's own configuration (.git/config, config.worktree and any
// file they include) can name programs that git runs: filter drivers
// (clean, smudge, process) chosen by .gitattributes, diff and merge
// drivers and textconv, hooks (post-checkout on worktree creation,
// pre-commit, reference-transaction...), fsmonitor, pagers, gpg for
// signing and for signature placeholders such as %G?, the transport of a
// promisor remote that git fetches missing objects from, and the
// configuration of a submodule that status recurses into. git 2.39 has
// no switch to ignore repository configuration or in-tree .gitattributes
// (--attr-source arrived later), and pointing GIT_DIR at a sanitised
// copy would mean copying refs, index and worktree metadata. So, in
// layers:
//
//  1. The repository (repodir.go). New resolves the git directory itself
//     and refuses a .git file or symlink, a commondir, an alternates
//     entry or a symlinked entry of the git directory that points
//     outside the work tree (ErrOutsideRoot); a genuine linked worktree,
//     whose git directory names the work tree back, is accepted with its
//     main repository. GIT_DIR names what was checked and GIT_WORK_TREE
//     pins the work tree, whatever core.worktree says.
//  2. The environment. No system or global configuration, no caller
//     environment but PATH, no pager, no prompt, no templates for git
//     init, no optional locks, and a fixed identity (IdentityName,
//     IdentityEmail) for every commit.
//  3. Fixed overrides for every top-level key that names a program, a
//     file outside the repository, signing, background gc and
//     maintenance, or index extensions that keep state, set whether or
//     not the repository sets them (config.go).
//  4. The repository's configuration is listed first with
//     `git config --list --name-only --includes -z`, which runs nothing
//     and follows include.path and includeIf exactly as the real command
//     will; every listed key that names a program under a per-driver
//     name (filter.<driver>.clean, diff.<driver>.textconv,
//     merge.<driver>.driver, protocol.<name>.allow, ...) gets an
//     override. An include itself cannot be overridden, but whatever it
//     pulls in is listed and neutralised. The listing has a short time
//     bound of its own (an include naming a named pipe would block it),
//     past which New fails with ErrConfigStuck. Conditional includes
//     (includeIf onbranch:, gitdir:) depend on the work tree and git
//     directory git runs in, so the caller makes a Git for the context
//     each command runs in, and keeps away from commands that start
//     another git in another context (git worktree add checking the new
//     worktree out, say).
//  5. The caller's flags: read-only callers pass --no-ext-diff,
//     --no-textconv and --ignore-submodules=all (a submodule's own
//     configuration is not listed, so git must not recurse into it).
//
// Overrides go through GIT_CONFIG_COUNT/KEY/VALUE rather than -c, which
// splits "key=value" at the first '=' and so cannot name a driver whose
// name holds one; they have command scope, above the repository's, and
// reach the git processes git itself starts. An empty program disables
// clean, smudge and process filters; an empty textconv, external diff or
// merge driver makes git fail rather than run anything, so a call that
// would need one fails closed. A file under a filter (git-lfs, say) is
// therefore read and written in its stored form.
//
// A Git holds one check and one listing: make one for each operation, so
// that each sees the repository as it is then. Every git process runs
// in a process group of its own that dies with troupe and is killed
// whole when its context ends, and what troupe reads of its output is
// bounded.
package gitsafe
