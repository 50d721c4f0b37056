package manager

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/tmc/langchaingo/llms"

	"github.com/troupe-dev/troupe/agenttypes"
	"github.com/troupe-dev/troupe/builtin/models/modelcap"
	"github.com/troupe-dev/troupe/builtin/models/modelname"
)

// Manager spawns and tracks agents. It is safe for concurrent use.
type Manager struct {
	id     string
	cfg    Config
	events *broadcaster

	base     context.Context
	shutdown context.CancelCauseFunc
	// roots is base without its cancel: the context top-level (and
	// detached) agents derive from. Close cancels each of them itself, so
	// that creating and ending one takes no lock shared by all.
	roots context.Context

	// mu guards the running slots and the queue; the agents known by ID
	// are in shards with locks of their own, and retireMu guards the list
	// of ended ones. Taken one at a time, so that spawning an agent and
	// agents ending wait on each other as little as they can.
	mu       sync.Mutex
	queue    agentQueue // pending agents, in FIFO order
	resumers *list.List // of *Agent, taking a slot back after a wait; before the queue
	running  int
	closed   bool
	wg       sync.WaitGroup // one per agent not yet terminal

	known     [registryShards]registryShard
	retireMu  sync.Mutex
	ended     []string // IDs of ended agents, oldest first from endedHead
	endedHead int
	talkers   []*Agent // ended agents whose conversation is kept, oldest first

	callbacksMu    sync.RWMutex
	callbacks      []func(Info)
	groupCallbacks []func(*Group)

	transcripts *transcriptWriter // nil when transcripts are off
	// handoff passes an agent to start to an idle runner (runners.go);
	// unbuffered, so a send succeeds only when one is waiting.
	handoff    chan *Agent
	runnerIdle time.Duration
	// helperDelay is helperDelay but in tests.
	helperDelay time.Duration
	tel         *telemetry // nil when spans and metrics are off

	models sync.Map // model name → llms.Model
	setups sync.Map // type name → *typeSetup

	mcpMu        sync.Mutex
	mcpDescribed map[string]*mcpDescription // by server name: described, or being described

	counts      [numStates]atomic.Int64
	inTokens    atomic.Int64
	outTokens   atomic.Int64
	costNanoUSD atomic.Int64
	toolCalls   atomic.Int64
	turns       atomic.Int64
	busyNanos   atomic.Int64
}

// New returns a Manager. Registry and Models are required.
func New(cfg Config) (*Manager, error) {
	if cfg.Registry == nil {
		return nil, errors.New("manager: Config.Registry is nil; pass agenttypes.NewRegistry() with types registered")
	}
	if cfg.Models == nil && cfg.Backend == nil {
		return nil, errors.New("manager: Config.Models is nil; pass a ModelResolver")
	}
	if err := cfg.DefaultBudget.Validate(); err != nil {
		return nil, fmt.Errorf("manager: default budget: %w", err)
	}
	cfg.setDefaults()
	base, cancel := context.WithCancelCause(context.Background())
	id := uuid.NewString()
	var tw *transcriptWriter
	if cfg.TranscriptDir != "" {
		tw = newTranscriptWriter(filepath.Join(cfg.TranscriptDir, id+".jsonl"), cfg.Logger)
	}
	m := &Manager{
		id:           id,
		transcripts:  tw,
		cfg:          cfg,
		events:       newBroadcaster(cfg.SubscriptionBuffer),
		base:         base,
		roots:        context.WithoutCancel(base),
		shutdown:     cancel,
		resumers:     list.New(),
		mcpDescribed: map[string]*mcpDescription{},
		handoff:      make(chan *Agent),
		runnerIdle:   runnerIdle,
		helperDelay:  helperDelay,
	}
	tel, err := newTelemetry(m, &m.cfg)
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("manager: telemetry: %w", err)
	}
	m.tel = tel
	return m, nil
}

// ID returns the manager's ID, a UUID: it names the manager's transcript.
func (m *Manager) ID() string { return m.id }

// Registry returns the registry the manager spawns types from.
func (m *Manager) Registry() *agenttypes.Registry { return m.cfg.Registry }

// TranscriptPath is the file the manager writes its agents' events to, as
// JSON lines (see ReadTranscript); "" when Config.TranscriptDir is unset.
// The file is made when the first event is written.
func (m *Manager) TranscriptPath() string {
	if m.transcripts == nil {
		return ""
	}
	return m.transcripts.path
}

// SpawnRequest asks for one agent.
type SpawnRequest struct {
	// Type names a registered type.
	Type string
	// Task is what the agent is asked to do.
	Task string
	// Dir is the directory the agent's file tools work in. Optional; it
	// must exist when given.
	Dir string
	// Model overrides the type's model ("provider:model" or an alias).
	Model string
	// Budget overrides the type's default budget field by field; zero
	// fields keep the default.
	Budget agenttypes.Budget
	// ParentID makes the agent a child of another agent.
	ParentID string
	// Label is a short name for progress displays.
	Label string
	// Tools narrows the type's tools to these; it never widens them. A
	// child's tools are also limited to its parent's, but for the tools
	// of an MCP server its type names and its parent's does not: those
	// it has unless an ancestor disallows them or was narrowed by Tools.
	Tools []string
	// MaxOutputTokens caps each model call of the agent; 0 leaves the cap
	// to the token budget.
	MaxOutputTokens int
	// Resume is the ID of an ended agent whose conversation the new agent
	// continues, with Task as the next message. With a ParentID, the
	// resumed agent must be of the same tree.
	Resume string
	// OnQuestion answers the agent's children's questions before
	// Config.OnQuestion and the agent's own model do.
	OnQuestion QuestionHandler
	// Detach lets a child outlive its parent: it is not cancelled when
	// its parent ends. Only Go callers set it; delegated children never
	// outlive their parent.
	Detach bool
}

// Spawn validates req and starts an agent, or queues it as pending when
// MaxConcurrent agents are running. ctx bounds only the call (resolving the
// model, describing the type's MCP servers, which may start them); the
// agent itself runs until it ends, is cancelled, or the manager is closed.
// A span in ctx is the parent of the agent's (Config.TracerProvider).
func (m *Manager) Spawn(ctx context.Context, req SpawnRequest) (*Agent, error) {
	a, err := m.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := m.admit(ctx, a); err != nil {
		m.discard(a)
		return nil, err
	}
	return a, nil
}

// prepare validates a request and builds its agent without admitting it:
// the request checked, the type set up, the agent placed in its tree, its
// model resolved, its budget clamped to its ancestors', its tools chosen.
func (m *Manager) prepare(ctx context.Context, req SpawnRequest) (*Agent, error) {
	if err := validateRequest(req); err != nil {
		return nil, err
	}
	typ, err := m.cfg.Registry.Type(req.Type)
	if err != nil {
		return nil, err
	}
	at, err := m.place(req)
	if err != nil {
		return nil, err
	}
	remote := m.cfg.Backend != nil && at.parent == nil
	if !remote {
		// Described before the setup is built, so that it covers their
		// tools. (A backend's workers describe their own.)
		if err := m.describeMCP(ctx, typ); err != nil {
			return nil, err
		}
	}
	setup, err := m.setup(typ)
	if err != nil {
		return nil, err
	}
	var resumed *Agent
	if req.Resume != "" {
		if resumed, err = m.resumable(req.Resume, typ, at.parent, remote); err != nil {
			return nil, err
		}
	}
	modelName := m.modelName(req, typ, at.parent)
	var model llms.Model
	var budget agenttypes.Budget
	if remote {
		budget = req.Budget.Merge(typ.Budget).Merge(m.cfg.DefaultBudget)
	} else { // a backend's workers resolve the model, and check its price
		if model, err = m.model(ctx, modelName); err != nil {
			return nil, err
		}
		if modelcap.IsRetrievalOnly(model) && typ.NeedsLanguageModel {
			return nil, fmt.Errorf("%w: type %q needs a language model, and %q only retrieves; name a language model (provider:model) in the request, the type or Config.DefaultModel", ErrModel, typ.Name, modelName)
		}
		if budget, err = m.budgetFor(req, typ, at.parent, model, modelName); err != nil {
			return nil, err
		}
	}
	tools, err := m.toolsFor(setup, at.parent, at.depth, m.cfg.MaxDepth, req.Tools)
	if err != nil {
		return nil, err
	}
	a := &Agent{
		m: m, id: uuid.NewString(), parentID: req.ParentID, parent: at.parent, depth: at.depth,
		typ: typ, setup: setup, tools: tools, task: req.Task, label: req.Label, dir: req.Dir,
		model: model, modelName: modelName, budget: budget, maxOutput: req.MaxOutputTokens,
		resumed: resumed, onQuestion: req.OnQuestion, narrowed: len(req.Tools) > 0,
		done: make(chan struct{}), ready: make(chan struct{}), created: m.cfg.now(), state: Pending,
	}
	a.tshard = shardOf(a.id)
	if err := a.join(at.ctx, !req.Detach); err != nil {
		return nil, err
	}
	if err := m.openWorkspace(ctx, a); err != nil {
		m.discard(a)
		return nil, err
	}
	return a, nil
}

// validateRequest checks what a request says on its own.
func validateRequest(req SpawnRequest) error {
	if strings.TrimSpace(req.Task) == "" {
		return fmt.Errorf("%w: the task is empty; say what the agent should do", ErrBadRequest)
	}
	if err := req.Budget.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if req.MaxOutputTokens < 0 {
		return fmt.Errorf("%w: max output tokens is %d; give a positive number, or 0 for no cap beyond the budget", ErrBadRequest, req.MaxOutputTokens)
	}
	if req.Dir != "" {
		fi, err := os.Stat(req.Dir)
		if err != nil {
			return fmt.Errorf("%w: directory %q: %w; pass a directory that exists", ErrBadRequest, req.Dir, err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%w: %q is a file, not a directory; pass the directory to work in", ErrBadRequest, req.Dir)
		}
	}
	return nil
}

// placement is where a new agent goes in its tree: its parent (nil at the
// top), its depth, and the context its own derives from.
type placement struct {
	parent *Agent
	depth  int
	ctx    context.Context
}

// place finds a request's parent, refusing one that is ending or too deep.
func (m *Manager) place(req SpawnRequest) (placement, error) {
	at := placement{ctx: m.roots}
	if req.ParentID == "" {
		return at, nil
	}
	p := m.lookup(req.ParentID)
	switch {
	case p == nil:
		return at, fmt.Errorf("%w: parent %q", ErrNotFound, req.ParentID)
	case p.isEnding():
		return at, p.endedError()
	case p.remote():
		return at, fmt.Errorf("%w: agent %s runs on the manager's backend, with its whole tree; its own delegate tool spawns its children there", ErrDelegation, p.id)
	case p.depth+1 > m.cfg.MaxDepth:
		return at, fmt.Errorf("%w: agent %s is at depth %d and may not spawn children (the limit is %d)", ErrDepthExceeded, p.id, p.depth, m.cfg.MaxDepth)
	}
	at.parent, at.depth = p, p.depth+1
	if !req.Detach {
		at.ctx = p.ctx
	}
	return at, nil
}

// budgetFor is a new agent's budget: the request's, filled from its type's
// and the default, clamped to what its ancestors have left. A cost budget
// needs a model that knows its price.
func (m *Manager) budgetFor(req SpawnRequest, typ *agenttypes.Type, parent *Agent, model llms.Model, modelName string) (agenttypes.Budget, error) {
	budget := req.Budget.Merge(typ.Budget).Merge(m.cfg.DefaultBudget)
	if parent != nil {
		var err error
		if budget, err = parent.clampChild(budget); err != nil {
			return budget, err
		}
	}
	if budget.MaxCostUSD > 0 && !knowsPrice(model) {
		return budget, fmt.Errorf("%w: a cost budget of $%g is set, and model %q has no known price; give the model a price, or leave the cost budget unset", ErrBadRequest, budget.MaxCostUSD, modelName)
	}
	return budget, nil
}

// join gives a its context, derived from parentCtx, and counts it in its
// tree: as its parent's child (one its parent's end waits for, when
// attached) and among the agents that may want a share of a budget.
func (a *Agent) join(parentCtx context.Context, attached bool) error {
	p := a.parent
	if p != nil {
		if err := p.reserveChild(); err != nil {
			return err
		}
	}
	a.ctx, a.cancel = context.WithCancelCause(parentCtx)
	a.root = a
	if p != nil {
		a.root = p.root
		if attached {
			if !p.childBorn() {
				a.root.alive.Add(-1)
				p.children.Add(-1)
				a.cancel(nil)
				return p.endedError()
			}
			a.attached = true
		}
	}
	// Counted from here, so the members of a group are all counted before
	// the first of them asks for a share of a budget.
	a.countLiving()
	return nil
}

// discard drops an agent that was prepared and will not be admitted.
func (m *Manager) discard(a *Agent) {
	a.uncountLiving()
	if a.parent != nil {
		a.root.alive.Add(-1)
		a.parent.children.Add(-1) // a refused request spends none of the parent's children
		if a.attached {
			a.parent.childGone()
		}
	}
	a.cancel(nil)
	if _, err := a.closeWorkspace(); err != nil {
		m.cfg.Logger.Warn("the workspace of an agent that never started could not be closed", "agent", a.id, "err", err)
	}
}

// admit registers a and starts it or queues it. a is known by its ID
// only once it is admitted, so a refused Spawn is never listed nor
// waited on; and before the manager's lock is let go, so Close, which
// sets closed under that lock and then cancels every agent it knows,
// misses none.
func (m *Manager) admit(ctx context.Context, a *Agent) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	start := m.running < m.cfg.MaxConcurrent
	if start {
		m.running++
		a.slot.Store(true)
	} else {
		if n := m.queue.n; n >= m.cfg.MaxQueue {
			m.mu.Unlock()
			return fmt.Errorf("%w: %d agents are pending; wait for some to finish or raise MaxQueue", ErrQueueFull, n)
		}
		m.queue.pushBack(a)
	}
	m.register(a)
	m.wg.Add(1)
	m.counts[Pending].Add(1)
	m.mu.Unlock()
	if !start {
		// A queued agent has no loop to notice its context ending (its
		// parent cancelled or ended, the manager closing): this does.
		// Whoever reads stopWatch waits for ready first.
		a.stopWatch = context.AfterFunc(a.ctx, a.endIfQueued)
	}

	m.tel.startAgent(ctx, a)
	a.emit(&Event{Kind: EventSpawned, State: Pending, Text: a.task})
	close(a.ready)
	if start {
		m.goRun(a)
	}
	return nil
}

// admitHeld registers a as pending without starting or queueing it: its
// group lets it go (releaseHeld) when the group's concurrency allows.
func (m *Manager) admitHeld(ctx context.Context, a *Agent) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	if n := m.queue.n; n >= m.cfg.MaxQueue {
		m.mu.Unlock()
		return fmt.Errorf("%w: %d agents are pending; wait for some to finish or raise MaxQueue", ErrQueueFull, n)
	}
	m.register(a)
	a.held = true
	a.stopWatch = context.AfterFunc(a.ctx, a.endIfQueued)
	m.wg.Add(1)
	m.counts[Pending].Add(1)
	m.mu.Unlock()
	m.tel.startAgent(ctx, a)
	a.emit(&Event{Kind: EventSpawned, State: Pending, Text: a.task})
	close(a.ready)
	return nil
}

// register makes a known by its ID; unregister forgets an agent that was
// not admitted.
func (m *Manager) register(a *Agent) {
	sh := m.shard(a.id)
	sh.mu.Lock()
	if sh.agents == nil {
		sh.agents = map[string]*Agent{}
	}
	sh.agents[a.id] = a
	sh.mu.Unlock()
}

func (m *Manager) forget(id string) {
	sh := m.shard(id)
	sh.mu.Lock()
	delete(sh.agents, id)
	sh.mu.Unlock()
}

// registryShards is how many parts the agents known by ID are kept in.
const registryShards = 16

type registryShard struct {
	mu     sync.Mutex
	agents map[string]*Agent
	_      [48]byte // apart from the next shard's lock
}

func (m *Manager) shard(id string) *registryShard {
	return &m.known[idHash(id)%registryShards]
}

// idHash hashes an agent's ID (FNV-1a) to spread agents over shards.
func idHash(id string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	return h
}

// releaseHeld starts a held agent or queues it for a slot, and reports
// whether it did; an agent that ended while held is left alone.
func (m *Manager) releaseHeld(a *Agent) bool {
	m.mu.Lock()
	if !a.held {
		m.mu.Unlock()
		return false
	}
	a.held = false
	start := m.running < m.cfg.MaxConcurrent && m.queue.n == 0 && m.resumers.Len() == 0
	if start {
		m.running++
		a.slot.Store(true)
	} else {
		m.queue.pushBack(a)
	}
	m.mu.Unlock()
	if start {
		m.goRun(a)
	}
	return true
}

// The running slots. At most MaxConcurrent agents hold one. An agent gives
// its slot back when it ends, and lends it out while it waits for other
// agents (from a tool call), so a parent waiting on its children never
// holds the slot they need; it takes a slot back, before any pending agent
// starts, when the wait is over.

// slotWait is one wait of a running agent on others, during which it
// lends its slot. The agent whose end completes the wait hands its slot
// straight to the waiter, so the waiter resumes before any pending agent.
type slotWait struct {
	w    *Agent
	on   []*Agent
	over bool // the wait has returned; guarded by m.mu
}

// releaseSlot gives back a's slot, if it holds one: to an agent whose wait
// a's end completes, else to the next in line.
func (m *Manager) releaseSlot(a *Agent) {
	m.mu.Lock()
	waits := a.waits
	a.waits = nil
	a.gone = true // never lends or takes a slot again
	if !a.slot.Swap(false) {
		m.mu.Unlock()
		return
	}
	m.running--
	for _, sw := range waits {
		if w := sw.w; !sw.over && !w.gone && w.lent == 1 && !w.slot.Load() && w.resume == nil && allEnded(sw.on) {
			w.slot.Store(true)
			m.running++
			break
		}
	}
	var buf [1]*Agent
	start, drop := m.handOffLocked(buf[:0])
	m.mu.Unlock()
	m.startAll(start, drop)
}

// startAll starts the agents handOffLocked took from the queue, and ends
// those whose context had already ended.
func (m *Manager) startAll(start, drop []*Agent) {
	for _, next := range start {
		m.goRun(next)
	}
	for _, d := range drop {
		go d.endDequeued()
	}
}

func allEnded(agents []*Agent) bool {
	for _, a := range agents {
		a.mu.Lock()
		ended := a.state.Terminal()
		a.mu.Unlock()
		if !ended {
			return false
		}
	}
	return true
}

// handOffLocked fills free slots: agents resuming after a wait first, then
// the oldest pending agents, which it appends to start, to be started.
// m.mu is held. (A slot given back frees one: start, on the caller's
// stack, then has room for it.)
func (m *Manager) handOffLocked(start []*Agent) (_, drop []*Agent) {
	for m.running < m.cfg.MaxConcurrent {
		if front := m.resumers.Front(); front != nil {
			r := m.resumers.Remove(front).(*Agent)
			r.resumeElem = nil
			r.slot.Store(true)
			m.running++
			close(r.resume)
			r.resume = nil
			continue
		}
		next := m.queue.head
		if next == nil {
			break
		}
		m.queue.remove(next)
		if next.ctx.Err() != nil {
			// Cancelled in the queue (its parent ended, say): it never runs.
			drop = append(drop, next)
			continue
		}
		next.slot.Store(true)
		m.running++
		start = append(start, next)
	}
	return start, drop
}

// lendSlot lets others use w's slot while w waits on agents.
func (m *Manager) lendSlot(w *Agent, on []*Agent) *slotWait {
	m.mu.Lock()
	// The slot is taken before tooling is read, and leaveTools counts
	// tooling down before it reads slot: one of the two sees the other.
	had := w.slot.Swap(false)
	if w.gone || w.tooling.Load() == 0 {
		// Only an agent inside a tool call lends: not one that has ended,
		// nor one whose loop goes on (a wait left running in the background).
		w.slot.Store(had)
		m.mu.Unlock()
		return nil
	}
	sw := &slotWait{w: w, on: on}
	for _, a := range on {
		a.waits = append(a.waits, sw)
	}
	w.lent++
	if w.resume != nil {
		// Another call of w was taking a slot back; this wait needs none.
		m.resumers.Remove(w.resumeElem)
		close(w.resume)
		w.resume, w.resumeElem = nil, nil
	}
	if !had { // already lent (it may have been handed back: lend it again)
		m.mu.Unlock()
		return sw
	}
	m.running--
	var buf [1]*Agent
	start, drop := m.handOffLocked(buf[:0])
	m.mu.Unlock()
	m.startAll(start, drop)
	return sw
}

// reclaimSlot ends a wait: when it was w's last, w takes a slot back (it
// may have been handed one already), waiting for one if all are taken,
// until ctx ends.
func (m *Manager) reclaimSlot(sw *slotWait) {
	w := sw.w
	m.mu.Lock()
	sw.over = true
	for _, a := range sw.on { // a wait that gave up leaves nothing behind
		a.waits = slices.DeleteFunc(a.waits, func(x *slotWait) bool { return x == sw })
	}
	w.lent--
	if w.lent > 0 || w.slot.Load() || w.resume != nil || w.gone || w.tooling.Load() == 0 {
		m.mu.Unlock()
		return
	}
	m.acquireLocked(w)
}

// acquireLocked gives w a slot, waiting in the resumers' line until one
// is free or w's run ends. m.mu is held and is released.
func (m *Manager) acquireLocked(w *Agent) {
	if m.running < m.cfg.MaxConcurrent && m.resumers.Len() == 0 {
		w.slot.Store(true)
		m.running++
		m.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	w.resume = ch
	w.resumeElem = m.resumers.PushBack(w)
	m.mu.Unlock()
	// The agent's own run context, not the wait's: a wait that times out
	// must not let the agent go on without a slot.
	select {
	case <-ch:
	case <-w.runCtx.Done():
		m.mu.Lock()
		if w.resumeElem != nil {
			m.resumers.Remove(w.resumeElem)
			w.resumeElem, w.resume = nil, nil
		}
		m.mu.Unlock()
	}
}

// enterTools and leaveTools bracket a turn's tool calls, the only time an
// agent lends its slot. Leaving, the agent takes a slot back even when a
// wait started by a tool goes on in the background.
// An agent that held its slot throughout takes no lock.
func (m *Manager) enterTools(a *Agent) { a.tooling.Add(1) }

func (m *Manager) leaveTools(a *Agent) {
	if a.tooling.Add(-1) > 0 || a.slot.Load() {
		return
	}
	m.mu.Lock()
	if a.tooling.Load() > 0 || a.slot.Load() || a.gone || a.resume != nil {
		m.mu.Unlock()
		return
	}
	m.acquireLocked(a)
}

// await waits for every agent in agents to end, or for ctx. When ctx is
// the context of a tool call of a running agent of this manager, that
// agent lends its slot while it waits.
func (m *Manager) await(ctx context.Context, agents []*Agent) ([]Result, error) {
	out := make([]Result, len(agents))
	blocked := false
	for _, a := range agents {
		select {
		case <-a.done:
		default:
			blocked = true
		}
	}
	if blocked {
		if id := agenttypes.EnvFrom(ctx).AgentID; id != "" {
			if w := m.lookup(id); w != nil && !slices.Contains(agents, w) {
				if sw := m.lendSlot(w, agents); sw != nil {
					defer m.reclaimSlot(sw)
				}
			}
		}
	}
	for i, a := range agents {
		select {
		case <-a.done:
			out[i] = a.resultNow()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// retire remembers that a ended, forgetting the oldest ended agent when
// more than KeepEnded are remembered, so a long-lived manager stays small.
func (m *Manager) retire(a *Agent) {
	var quiet *Agent  // whose conversation is let go
	var forget string // whom Get no longer finds
	m.retireMu.Lock()
	// Conversations are kept for resume, for the most recent
	// KeepConversations ended agents only: they are the large part.
	m.talkers = append(m.talkers, a)
	if len(m.talkers) > m.cfg.KeepConversations {
		quiet = m.talkers[0]
		m.talkers[0] = nil
		m.talkers = m.talkers[1:]
	}
	m.ended = append(m.ended, a.id)
	if len(m.ended)-m.endedHead > m.cfg.KeepEnded {
		forget = m.ended[m.endedHead]
		m.ended[m.endedHead] = ""
		m.endedHead++
		// Compact once half the slice is spent: amortised O(1) a call.
		if m.endedHead > len(m.ended)/2 {
			m.ended = append(m.ended[:0], m.ended[m.endedHead:]...)
			m.endedHead = 0
		}
	}
	m.retireMu.Unlock()
	// Outside retireMu, which every ending agent takes: each of these
	// takes a lock of its own.
	if quiet != nil {
		quiet.mu.Lock()
		quiet.history = nil
		quiet.mu.Unlock()
	}
	if forget != "" {
		m.forget(forget)
	}
}

// agentQueue is a FIFO list of agents linked through their own fields,
// so queueing one, under m.mu, allocates nothing.
type agentQueue struct {
	head, tail *Agent
	n          int
}

func (q *agentQueue) pushBack(a *Agent) {
	a.qprev, a.qnext, a.queued = q.tail, nil, true
	if q.tail != nil {
		q.tail.qnext = a
	} else {
		q.head = a
	}
	q.tail = a
	q.n++
}

func (q *agentQueue) remove(a *Agent) {
	if a.qprev != nil {
		a.qprev.qnext = a.qnext
	} else {
		q.head = a.qnext
	}
	if a.qnext != nil {
		a.qnext.qprev = a.qprev
	} else {
		q.tail = a.qprev
	}
	a.qprev, a.qnext, a.queued = nil, nil, false
	q.n--
}

// dequeue removes a pending agent from the queue; false if it was not
// queued (it has started, or is starting).
func (m *Manager) dequeue(a *Agent) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a.held {
		a.held = false
		return true
	}
	if !a.queued {
		return false
	}
	m.queue.remove(a)
	return true
}

func (m *Manager) modelName(req SpawnRequest, typ *agenttypes.Type, parent *Agent) string {
	if req.Model != "" && req.Model != modelname.Inherit {
		return req.Model
	}
	if typ.Model != "" && typ.Model != modelname.Inherit {
		return typ.Model
	}
	if parent != nil {
		return parent.modelName
	}
	return m.cfg.DefaultModel
}

func (m *Manager) model(ctx context.Context, name string) (llms.Model, error) {
	if v, ok := m.models.Load(name); ok {
		return v.(llms.Model), nil
	}
	if name == "" {
		return nil, fmt.Errorf("%w: no model named; set Config.DefaultModel, the type's model, or the request's Model", ErrModel)
	}
	model, err := m.cfg.Models.Resolve(ctx, name)
	if err != nil {
		if strings.Contains(err.Error(), strconv.Quote(name)) {
			return nil, fmt.Errorf("%w: %w", ErrModel, err) // it names the model already
		}
		return nil, fmt.Errorf("%w: %q: %w", ErrModel, name, err)
	}
	if model == nil {
		return nil, fmt.Errorf("%w: resolving %q gave no model", ErrModel, name)
	}
	v, _ := m.models.LoadOrStore(name, model)
	return v.(llms.Model), nil
}

func (m *Manager) lookup(id string) *Agent {
	sh := m.shard(id)
	sh.mu.Lock()
	a := sh.agents[id]
	sh.mu.Unlock()
	return a
}

// Agent returns the handle of the agent with the given ID.
func (m *Manager) Agent(id string) (*Agent, error) {
	if a := m.lookup(id); a != nil {
		return a, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
}

// Get returns a snapshot of the agent with the given ID.
func (m *Manager) Get(id string) (Info, error) {
	a, err := m.Agent(id)
	if err != nil {
		return Info{}, err
	}
	return a.Info(), nil
}

// Filter selects agents for List. Zero fields match everything.
type Filter struct {
	States   []State
	Type     string
	ParentID string
}

func (f Filter) match(i *Info) bool {
	return (len(f.States) == 0 || slices.Contains(f.States, i.State)) &&
		(f.Type == "" || f.Type == i.Type) &&
		(f.ParentID == "" || f.ParentID == i.ParentID)
}

// List returns snapshots of the agents f matches, oldest first.
func (m *Manager) List(f Filter) []Info {
	all := m.knownAgents()
	out := make([]Info, 0, len(all))
	for _, a := range all {
		if i := a.Info(); f.match(&i) {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b Info) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Wait blocks until the agent ends or ctx is done. The error is non-nil
// only when waiting failed; how the run went is in the Result.
func (m *Manager) Wait(ctx context.Context, id string) (Result, error) {
	a, err := m.Agent(id)
	if err != nil {
		return Result{}, err
	}
	return a.Wait(ctx)
}

// WaitAll waits for every listed agent and returns their results in the
// order of ids.
func (m *Manager) WaitAll(ctx context.Context, ids ...string) ([]Result, error) {
	agents := make([]*Agent, len(ids))
	for i, id := range ids {
		a, err := m.Agent(id)
		if err != nil {
			return nil, err
		}
		agents[i] = a
	}
	return m.await(ctx, agents)
}

// SpawnParallel spawns every request, waits for all of them, and returns
// their results in the order of reqs, whatever order they finished in.
// Every request is validated before any is spawned. When ctx ends first,
// the group is cancelled and SpawnParallel returns at once with ctx's
// error and a result for every request: the final one for agents that had
// ended, and for the others their state at that moment with Partial set
// (Wait on their IDs for the final results).
func (m *Manager) SpawnParallel(ctx context.Context, reqs []SpawnRequest) ([]Result, error) {
	prepared := make([]*Agent, len(reqs))
	for i, req := range reqs {
		a, err := m.prepare(ctx, req)
		if err != nil {
			for _, p := range prepared[:i] {
				m.discard(p)
			}
			return nil, fmt.Errorf("request %d (%s): %w", i, req.Type, err)
		}
		prepared[i] = a
	}
	for i, a := range prepared {
		if err := m.admit(ctx, a); err != nil {
			for _, p := range prepared[:i] {
				p.Cancel()
			}
			for _, p := range prepared[i:] {
				m.discard(p)
			}
			return nil, fmt.Errorf("request %d (%s): %w", i, a.typ.Name, err)
		}
	}
	results, err := m.await(ctx, prepared)
	if err == nil {
		return results, nil
	}
	results = make([]Result, len(prepared))
	for i, a := range prepared {
		a.Cancel()
		results[i] = a.resultOrSnapshot(err)
	}
	return results, err
}

// resultOrSnapshot is the agent's result when it has ended, else a partial
// result with its state and usage so far and err.
func (a *Agent) resultOrSnapshot(err error) Result {
	select {
	case <-a.done:
		return a.resultNow()
	default:
	}
	i := a.Info()
	if i.State.Terminal() {
		return a.resultNow()
	}
	return Result{ID: i.ID, Type: i.Type, Model: i.Model, State: i.State, Reason: ReasonCancelled, Partial: true,
		Err: err, Error: err.Error(), Usage: i.Usage, ToolCalls: i.ToolCalls, Turns: i.Turns}
}

// Cancel cancels the agent with the given ID. Cancelling an agent that
// has ended does nothing.
func (m *Manager) Cancel(id string) error {
	a, err := m.Agent(id)
	if err != nil {
		return err
	}
	a.Cancel()
	return nil
}

// CancelAll cancels every agent that has not ended.
func (m *Manager) CancelAll() {
	for _, a := range m.knownAgents() {
		a.Cancel()
	}
}

// cancelAll cancels every agent's context with cause.
func (m *Manager) cancelAll(cause error) {
	for _, a := range m.knownAgents() {
		a.cancel(cause)
	}
}

// knownAgents returns the agents known by ID.
func (m *Manager) knownAgents() []*Agent {
	var all []*Agent
	for i := range m.known {
		sh := &m.known[i]
		sh.mu.Lock()
		for _, a := range sh.agents {
			all = append(all, a)
		}
		sh.mu.Unlock()
	}
	return all
}

// OnComplete registers fn to be called once for every agent that reaches
// a terminal state from now on. fn runs on the agent's goroutine, and
// Close waits for it, so fn must not call Close itself (start it on
// another goroutine instead); a panic in fn is logged and recovered.
func (m *Manager) OnComplete(fn func(Info)) {
	m.callbacksMu.Lock()
	m.callbacks = append(m.callbacks, fn)
	m.callbacksMu.Unlock()
}

// Subscribe returns a subscription to every event published from now on.
func (m *Manager) Subscribe() *Subscription { return m.events.subscribe() }

// Stats counts agents per state and what they consumed.
type Stats struct {
	Pending   int   `json:"pending"`
	Running   int   `json:"running"`
	Completed int   `json:"completed"`
	Failed    int   `json:"failed"`
	Cancelled int   `json:"cancelled"`
	Usage     Usage `json:"usage"`
	ToolCalls int   `json:"tool_calls"`
	Turns     int   `json:"turns"`
	// AgentTime is the running time of every agent added up.
	AgentTime time.Duration `json:"agent_time"`
}

// Stats returns the counters as they are now.
func (m *Manager) Stats() Stats {
	return Stats{
		Pending:   int(m.counts[Pending].Load()),
		Running:   int(m.counts[Running].Load()),
		Completed: int(m.counts[Completed].Load()),
		Failed:    int(m.counts[Failed].Load()),
		Cancelled: int(m.counts[Cancelled].Load()),
		Usage: Usage{
			InputTokens:  int(m.inTokens.Load()),
			OutputTokens: int(m.outTokens.Load()),
			CostUSD:      float64(m.costNanoUSD.Load()) / 1e9,
		},
		ToolCalls: int(m.toolCalls.Load()),
		Turns:     int(m.turns.Load()),
		AgentTime: time.Duration(m.busyNanos.Load()),
	}
}

// Close refuses new spawns, cancels every agent and waits for all of them
// to end, or for ctx to end. Subscriptions then deliver what they hold and
// close their channels.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.shutdown(errShutdown)
	m.tel.close() // a closed manager is not observed, even while its agents end
	// Before CancelAll, so running agents end with ReasonShutdown. Every
	// agent admitted is known by now: none is admitted once closed is set.
	m.cancelAll(errShutdown)
	m.CancelAll()
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		if m.transcripts != nil {
			m.transcripts.close()
		}
		// Subscriptions close once every agent has ended, even when the
		// caller stopped waiting for that.
		m.events.shutdown()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("manager: close: agents still running: %w", context.Cause(ctx))
	}
}
