package manager

import "fmt"

// State is where an agent is in its lifecycle.
type State uint8

// The lifecycle states. Completed, Failed and Cancelled are terminal. The
// zero State is none of them: an Event that reports no move of the
// lifecycle carries it, and says nothing of the state.
const (
	Pending State = iota + 1
	Running
	Completed
	Failed
	Cancelled
	numStates
)

var stateNames = [numStates]string{"", "pending", "running", "completed", "failed", "cancelled"}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Terminal reports whether s is a final state.
func (s State) Terminal() bool { return s >= Completed && s < numStates }

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	st, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// ParseState returns the state with the given name.
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name && n != "" {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("unknown state %q; use one of pending, running, completed, failed, cancelled", name)
}

// legal is the lifecycle, in one place: legal[from][to].
var legal = [numStates][numStates]bool{
	Pending: {Running: true, Cancelled: true},
	Running: {Completed: true, Failed: true, Cancelled: true},
}

// CanTransition reports whether the lifecycle allows from → to.
func CanTransition(from, to State) bool {
	return from < numStates && to < numStates && legal[from][to]
}
