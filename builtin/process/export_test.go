package process

import "time"

// DigestsAt is a memo in dir whose clock reads now.
func DigestsAt(dir string, now func() time.Time) Digests { return Digests{Dir: dir, now: now} }

// RacyAge is how long ago a file must have changed to be remembered.
const RacyAge = racyAge
