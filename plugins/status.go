package plugins

import (
	"slices"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// State is a supervisor's state (docs/plugins.md#crashes).
type State string

const (
	StateStarting   State = "starting"
	StateReady      State = "ready"
	StateDraining   State = "draining"
	StateRestarting State = "restarting"
	StateOpen       State = "open"
	StateRefused    State = "refused"
	StateStopped    State = "stopped"
)

// Status is one plugin as GET /agent_api/v1/plugins shows it (docs/api.md#plugins).
type Status struct {
	Name             string       `json:"name"`
	Kind             string       `json:"kind"`
	Enabled          bool         `json:"enabled"`
	State            State        `json:"state"`
	ExecutorPublicID *string      `json:"executor_public_id"`
	Info             *StatusInfo  `json:"info"`
	Command          string       `json:"command"`
	SHA256           string       `json:"sha256"`
	ChecksumPinned   bool         `json:"checksum_pinned"`
	PID              *int         `json:"pid"`
	Generation       int          `json:"generation"`
	StartedAt        *time.Time   `json:"started_at"`
	Restarts         int          `json:"restarts"`
	Breaker          BreakerState `json:"breaker"`
	InFlight         int          `json:"in_flight"`
	// PollFound counts the rows the inbox poll claimed that a wake-up should have announced;
	// each is also logged at warn. It stays 0 while the wake-up path works.
	PollFound int        `json:"poll_found"`
	Calls     CallCounts `json:"calls"`
	Tools     []string   `json:"tools"`
	// DefinitionDigests are the served tools' current definition digests
	// (announce.DefinitionDigest), which a pinned import compares at claim
	// (docs/agent-tools.md#pinned-imports): a changed digest is a changed definition.
	DefinitionDigests map[string]string `json:"definition_digests"`
	// Announcement is the announcement the executor serves (docs/plugins.md#protocol-11).
	Announcement AnnouncementStatus `json:"announcement"`
	Refusal      *RefusalStatus     `json:"refusal"`
	LastError    *string            `json:"last_error"`
	LastStderr   []string           `json:"last_stderr"`
}

// StatusInfo is the plugin's own Info.
type StatusInfo struct {
	Name             string `json:"name"`
	Version          string `json:"version"`
	ProtocolVersions []int  `json:"protocol_versions"`
	ProtocolMinor    int    `json:"protocol_minor"`
}

// BreakerState is the circuit breaker in a status.
type BreakerState struct {
	State     string     `json:"state"`
	Failures  int        `json:"failures"`
	OpenUntil *time.Time `json:"open_until"`
}

// CallCounts counts the calls of a plugin since the host started: errors are is_error results,
// failed are outcome failed commits, expired are calls settled by the expiry rule at once.
type CallCounts struct {
	Completed int `json:"completed"`
	Errors    int `json:"errors"`
	Failed    int `json:"failed"`
	Replayed  int `json:"replayed"`
	Expired   int `json:"expired"`
}

// status builds the supervisor's status; the caller holds no lock.
func (s *supervisor) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	st := Status{
		Name: s.entry.Name, Kind: string(s.entry.Kind), Enabled: s.entry.Enabled, State: s.state,
		Command: s.command, SHA256: s.digest, ChecksumPinned: s.entry.SHA256 != "",
		Generation: s.gen, Restarts: s.restarts, InFlight: len(s.inflight), PollFound: s.pollFinds, Calls: s.counts,
		Refusal: refusalStatus(s.refusal), Tools: []string{}, LastStderr: []string{},
		Breaker: BreakerState{State: s.breaker.state(now), Failures: len(s.breaker.failures)},
	}
	if s.executorID != "" {
		id := s.executorID
		st.ExecutorPublicID = &id
	}
	if until := s.breaker.openUntil; !until.IsZero() && now.Before(until) {
		u := until.UTC()
		st.Breaker.OpenUntil = &u
	}
	if s.lastErr != "" {
		e := s.lastErr
		st.LastError = &e
	}
	st.Announcement.Refusal = refusalStatus(s.annRefusal)
	if !s.annAt.IsZero() {
		at := s.annAt.UTC()
		st.Announcement.AnnouncedAt = &at
	}
	if in := s.inst; in != nil {
		st.Info = &StatusInfo{Name: in.info.Name, Version: in.info.Version, ProtocolVersions: in.info.ProtocolVersions, ProtocolMinor: in.info.ProtocolMinor}
		if s.state == StateReady || s.state == StateDraining {
			pid := in.pid
			st.PID = &pid
			at := in.startedAt.UTC().Truncate(time.Second)
			st.StartedAt = &at
			st.Announcement.Revision = in.revision
			st.DefinitionDigests = make(map[string]string, len(in.announce.Tools))
			for _, t := range in.announce.Tools {
				st.Tools = append(st.Tools, t.Name)
				st.DefinitionDigests[t.Name] = announce.DefinitionDigest(t)
			}
			slices.Sort(st.Tools)
		}
		st.LastStderr = in.stderr.Lines()
	} else if s.lastStderr != nil {
		st.LastStderr = s.lastStderr
	}
	return st
}
