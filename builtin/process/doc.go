// Package process starts the processes troupe runs for a project
// (plugins, servers, and the commands agents run) so that they hold only
// what they need and never outlive troupe.
//
// Three things are contained:
//
//   - The environment. Env passes a short, documented allow-list of the
//     caller's variables (PATH, HOME, locale, temporary directory and the
//     like) and what the caller names; nothing else, so a provider's API
//     key never reaches a plugin by accident.
//   - The bytes that run. Open opens an executable once and hashes it; the
//     process is started from that very open file on Linux (from a private
//     copy elsewhere), so a binary renamed into place after its checksum
//     was checked never runs.
//   - The process tree. Contain puts a process in a process group of its
//     own, which KillGroup ends whole, with a parent-death signal where
//     the platform has one. A program that calls ServeIfKeeper first in
//     main also gets keepers (Linux): Kept runs a command under a small
//     re-executed copy of the program that adopts every descendant and
//     kills them all when the command ends, when it is stopped, or when
//     troupe itself dies, even by SIGKILL; then it removes what
//     KeeperRemoves gave it (a plugin's socket directory), which a
//     killed troupe cannot.
//
// Run runs one command to its end that way, bounded in time and output,
// and, on Linux, confined as far as the kernel allows:
//
//   - It may change files only beneath the directories it is given, and
//     may neither make a device node nor, from Landlock ABI 5, call a
//     device's ioctl (Landlock, applied by its keeper before the command
//     starts).
//   - It has no controlling terminal: its keeper leads a session of its
//     own, so the command can neither read troupe's terminal nor push
//     keystrokes into it (TIOCSTI) for the user's shell to run.
//   - Without network, it reaches neither the network nor the host's
//     sockets. Its keeper starts in a network namespace of its own,
//     whose only loopback is down and which has no abstract Unix socket
//     of the host's, and in a mount namespace of its own (both in a user
//     namespace of its own when troupe is not root), where the
//     directories the host's path sockets live in (/run, /var/run, /tmp
//     with X11's sockets, $XDG_RUNTIME_DIR) are covered with an empty,
//     read-only file system: the session bus, which would start any
//     program unconfined, an ssh-agent and the Docker socket are out of
//     reach. What the command needs beneath them is shown again at its
//     path: its Writable directories and working directory, its program,
//     the directories of its PATH and the Visible directories it is
//     given; anything else there it does not see. Landlock keeps it from
//     reaching the hidden sockets through another process's root
//     (/proc/PID/root), from unmounting what hides them and, from ABI 6,
//     from connecting to an abstract socket made outside its
//     confinement. A path socket anywhere else, in $HOME for one, is
//     still in its reach.
//
// The result says which applied: Writes for Landlock; Network only when
// the network namespace, the hiding of every socket directory and
// Landlock all did. A Writable directory is never hidden: when sockets
// live beneath one, Network is false.
package process
