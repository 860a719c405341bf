package session

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Names. A session's instance is ftctl-PID-NONCE and its probe group ftctl_PID_NONCE: the pid
// of the process that ran it, for people (in its own pid namespace: another namespace may see
// another process under that number, or none), and 8 random hex digits that keep two sessions
// apart across pid namespaces and boots (two containers each running ftctl as pid 7). ftctl
// before November 2026 named them ftctl-PID and ftctl_PID; those names are still recognised.
const (
	instancePrefix = "ftctl-"
	groupPrefix    = "ftctl_"
	nonceLen       = 8
)

// SharedGroup is the probe group of `ftctl probe add` (and of the console attached to an
// existing instance with -B): ftctl's, but no session's.
const SharedGroup = "ftctl"

// ID identifies a session.
type ID struct {
	PID   int    `json:"pid"`
	Nonce string `json:"id,omitempty"` // "" for the names of earlier versions
	// Owner, for a declared owner (owner.go), is its name: no process, no pid.
	Owner string `json:"owner,omitempty"`
}

// NewID makes the identity of a new session run by process pid. The nonce needs to be unique,
// not secret (names are only made by root): it comes from math/rand/v2, which the Go runtime
// seeds from the 16 random bytes the kernel hands every new program (AT_RANDOM), and never
// blocks. crypto/rand's getrandom(2) blocks until the kernel's CRNG is ready, and a kernel
// without an entropy source (a VM under TCG, seen on 6.12) spins jitter entropy meanwhile:
// `ftctl latency` run early after boot spent 3.5 s of CPU and ~10 s of wall time there before
// arming anything (vm/bench-peers.sh, 2026-11-27).
func NewID(pid int) ID {
	var b [nonceLen / 2]byte
	binary.LittleEndian.PutUint32(b[:], rand.Uint32())
	return ID{PID: pid, Nonce: hex.EncodeToString(b[:])}
}

func (id ID) suffix(sep string) string {
	if id.Owner != "" {
		return ownedPrefix + sep + id.Owner
	}
	s := strconv.Itoa(id.PID)
	if id.Nonce != "" {
		s += sep + id.Nonce
	}
	return s
}

// String is "PID-NONCE" (or "PID"), as people see it.
func (id ID) String() string { return id.suffix("-") }

// Instance is the session's private instance.
func (id ID) Instance() string { return instancePrefix + id.suffix("-") }

// Group is the session's private probe group (a C identifier, at most 63 bytes: here 23).
func (id ID) Group() string { return groupPrefix + id.suffix("_") }

// Synthetic is the name of the session's synthetic event called what: the group's name and
// what, so that `ftctl reset` and people see whose it is (synthetic events have one
// namespace, the system "synthetic", shared by every instance).
func (id ID) Synthetic(what string) string { return id.Group() + "_" + what }

// InstanceID says whether an instance name is a session's, and whose.
func InstanceID(name string) (ID, bool) { return parseID(name, instancePrefix, "-") }

// GroupID says whether a probe group is a session's, and whose.
func GroupID(group string) (ID, bool) { return parseID(group, groupPrefix, "_") }

func parseID(name, prefix, sep string) (ID, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return ID{}, false
	}
	pidText, nonce, hasNonce := strings.Cut(rest, sep)
	if pidText == "" || strings.Trim(pidText, "0123456789") != "" || len(pidText) > 10 {
		return ID{}, false
	}
	if hasNonce && (len(nonce) != nonceLen || strings.Trim(nonce, "0123456789abcdef") != "") {
		return ID{}, false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != pidText {
		return ID{}, false
	}
	return ID{PID: pid, Nonce: nonce}, true
}

// OwnedGroup says whether a probe group is ftctl's: the shared group or a session's.
func OwnedGroup(group string) bool {
	if group == SharedGroup {
		return true
	}
	_, ok := GroupID(group)
	return ok
}
