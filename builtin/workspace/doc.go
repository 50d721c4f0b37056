// Package workspace gives each agent that changes files a workspace of
// its own: a git worktree on a fresh branch, under troupe's state
// directory, never in the user's tree. A Provider implements
// agenttypes.Workspaces; its workspaces implement agenttypes.Workspace.
//
// # Where a workspace starts
//
// A top-level agent's workspace starts from its directory as it is now.
// In a git repository (the directory is its top or any directory inside
// it; the agent then works in the same subdirectory of its worktree) that
// is HEAD plus everything not committed: staged, unstaged and untracked
// files. They are recorded without touching the user's index or files:
// a private copy of the index takes `git add -A`, git writes the tree,
// and a commit on HEAD holds it (HEAD itself when nothing is
// uncommitted). That commit is the workspace's base; Changes.Base names
// it. Changes name paths from the repository's top, whatever
// subdirectory the agent works in, so a patch applies there. A directory
// that is not in a git repository is snapshotted the same
// way into a private repository under the state directory (the directory
// gains no .git), within Config.MaxSnapshotFiles and MaxSnapshotBytes,
// past which Open fails with ErrTooLarge and says what to do.
//
// A child's workspace starts from its parent's workspace as it is now,
// uncommitted work included, recorded the same way, so that the
// parent's files, index and branch do not move. That commit is also
// remembered by the parent: its next commit takes it as a parent too, so
// that when the child's changes come back, the three-way merge's base is
// exactly what the child started from.
//
// Each workspace's branch is troupe/RUN/AGENT, the IDs cut to eight
// characters that a ref name allows ("-2", "-3"... when taken). Siblings
// never share a worktree, so they never see each other's writes.
//
// # What is never carried
//
// Ignored files (.gitignore files, .git/info/exclude and the user's own
// excludes file, Config.ExcludesFile) are never copied into a workspace
// nor committed from one: a child never sees a secret the user kept out
// of git, and build output and dependencies stay where they were made.
// Nothing the repository configures runs, at any step: git runs through
// package gitsafe, with no hooks, filters, fsmonitor, pager or signing,
// and a repository whose .git file, commondir or alternates point outside
// it is refused. A file under a filter (git-lfs, say) is carried in its
// stored form. Conditional includes in the repository's configuration
// (includeIf onbranch:, gitdir:) hold in some contexts and not others,
// so each git command runs through a gitsafe.Git made for the context
// it runs in: a worktree is made without a checkout (git would check it
// out in a git of its own, in the new worktree's context) and checked
// out by a Git made for the worktree itself.
//
// # Isolation
//
// Open either makes the whole workspace or nothing: on any failure the
// worktree, its branch and its record are removed, and the error wraps
// agenttypes.ErrWorkspace with the reason. There is no fallback to
// another directory.
//
// # When things are removed
//
// Close commits everything in the workspace, untracked files included,
// to its branch (a commit only when something changed), computes the
// changes since the base with a binary patch under the state directory,
// and only then removes the worktree, with `git worktree remove`. Before
// it removes it, it marks the workspace's record closing, with the
// commit that holds the work: a Close again, or Prune, that finds the
// mark (a process killed during the removal) returns the changes of
// that commit and removes what is left, which is not the agent's work.
// When recording fails, the worktree stays and the error says where. So it
// does when something in the workspace (a test, git init) made a git
// repository there: git records one repository inside another only as
// the commit it is at, never its files, so Close keeps the worktree and
// fails with ErrNestedRepository, naming the repositories and where the
// workspace is. Changes.Ignored names what ignore rules kept out of the
// record (build output, dependencies), which goes with the worktree.
// Branches and patches stay: they are the agent's result, and go when
// their run is discarded (Discard, DiscardRun).
//
// A Provider holds a lock file for as long as it is open, and every
// workspace has a record naming it. Prune, at startup, finds the
// records whose provider's lock is free (its process was killed),
// commits each workspace's contents to its branch as Close would, and
// removes it with git's own commands. Durable workspaces are not its to
// remove (see below). It also removes the lock files that killed
// processes left, which no workspace needs and nobody holds.
//
// # Durable workspaces
//
// A workspace opened with WorkspaceRequest.Durable outlives the process
// that opened it. A durable backend runs an agent's steps on any of its
// workers, each with a Provider of its own on one state directory (on
// one machine, or a filesystem they share): its Handle, STATE-ID/NAME,
// names the workspace, and Reopen, in any of them, returns it. The state
// directory's ID is made once, in a file at its root; a handle made on
// another state directory is refused, with the reason: every worker that
// runs types that change files must share one. Opening the same run's
// agent durable again, as a step run twice does, returns the workspace
// open already, or closed once it is.
//
// Prune leaves durable workspaces alone, whatever became of the process
// that opened them: only their Close, in any process, ends them, or
// DiscardRun. Close keeps the changes it returns in the state directory,
// so that a Close again (a step run twice, through Reopen) returns them
// and records nothing more; Discard and DiscardRun remove them.
//
// Each workspace, durable or not, has a lock file in the state
// directory, which its Merge, its Close and the start of each of its
// children hold, in whichever process, inside the workspace's own mutex:
// processes on one workspace take turns. Its record is the truth under
// that lock: a child's base, the commit its parent's next commit takes
// as a parent too, is kept there, so that a child started in one process
// has its base as the merge base when its changes come back to its
// parent in another. Where there are no advisory locks (not on Unix),
// nothing keeps two processes apart.
//
// # Merging
//
// Merge brings a finished child's branch into a workspace. The
// workspace's own uncommitted state is committed to its branch first;
// git merge-tree then merges the two commits without a work tree. A
// clean merge is committed and checked out (git changes only the files
// the merge changed); a conflict leaves every file as it was and
// returns each conflicting file with its hunks, as the merged file would
// hold them between conflict markers, and git's reason. Changes merged
// before merge as nothing. A file whose .gitattributes names a custom
// merge driver cannot be merged when both sides changed it: the driver
// is a program the repository names, and does not run.
//
// # Applying and discarding
//
// Apply brings an agent's changes into the tree they were made from
// (Changes.Dir: the user's directory for a top-level agent) with a
// three-way merge: the base is Changes.Base, theirs Changes.Head, ours
// the tree as it is now, HEAD plus everything uncommitted, recorded as
// Open records it, without touching the user's index. git merge-tree
// merges; only then, and only when the merge is clean, are the files it
// changed written, through an os.Root on the tree: never outside it,
// never through a symlink, never into .git, each file made aside and
// renamed into place. git checks them out first into the state
// directory, so that line endings are what a checkout writes. The index
// and HEAD stay: the changes show as unstaged changes and untracked
// files. A conflict, with the user's commits or uncommitted changes, an
// ignored file or a directory in the way, is refused before anything is
// written, with the files and hunks. Changes the tree holds already
// apply as nothing.
//
// Discard deletes an ended agent's branch, while it is where the agent
// left it, and its patch; DiscardRun removes the workspaces a killed
// process left open. Neither deletes any branch but troupe's.
//
// # Commands
//
// Workspace.Run runs a command in the workspace only when Config.AllowRun
// lets commands run in the project (a project's tests are its code, so
// a program allows them where the user trusts the project) and the
// type's run policy names its first words. It runs through
// process.Run: under a keeper that kills its whole tree on timeout, on
// cancel and when it ends; with the environment scrubbed of keys and
// troupe's variables; with no network, nor the host's sockets, unless
// the policy gives it (the repository stays in its sight); and,
// where Landlock exists, able to write only in the workspace, a private
// temporary directory made for the command, and Config.CacheDir, where
// GOCACHE points. The result says which confinement applied. A type's
// setup commands run the same way when its workspace opens; one that is
// refused or fails fails the Open, leaving nothing behind.
//
// A command may write anywhere below the worktree's top, Workspace.Top,
// and so may replace the agent's directory, Workspace.Dir, when the
// agent works in a subdirectory: with a symlink to the user's home, say.
// The file tools reach that directory from the top (fsroot.OpenBeneath)
// and refuse it once it is no longer a real directory inside; Run
// refuses to run a command there, and Open refuses a child whose
// directory is such a symlink in its parent's state.
package workspace
