package activities

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/a2adelegate/delegate/cards"
	"github.com/a2adelegate/delegate/contracts"
)

// Policy is the worker's local authorization policy (`--policy FILE` or
// DELEGATE_POLICY). An empty list puts no restriction on its dimension.
//
//	{
//	  "allowed_agent_origins": ["https://claims.example"],
//	  "allowed_skills": ["open-claim"],
//	  "allowed_purposes": ["open a claim*"],
//	  "max_deadline": "72h",
//	  "revoked_local_workflow_ids": ["lost-parcel-17"]
//	}
//
// allowed_purposes are path.Match patterns; max_deadline is a Go duration:
// the longest time from the check to the delegation's deadline.
type Policy struct {
	AllowedAgentOrigins []string `json:"allowed_agent_origins,omitempty"`
	AllowedSkills       []string `json:"allowed_skills,omitempty"`
	AllowedPurposes     []string `json:"allowed_purposes,omitempty"`
	MaxDeadline         string   `json:"max_deadline,omitempty"`
	RevokedWorkflowIDs  []string `json:"revoked_local_workflow_ids,omitempty"`

	maxDeadline time.Duration
}

// ParsePolicy parses and checks a policy document.
func ParsePolicy(raw []byte) (*Policy, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	for i, o := range p.AllowedAgentOrigins {
		n, err := cards.Origin(o)
		if err != nil {
			return nil, fmt.Errorf("allowed_agent_origins[%d]: %w", i, err)
		}
		p.AllowedAgentOrigins[i] = n
	}
	for i, pat := range p.AllowedPurposes {
		if _, err := path.Match(pat, ""); err != nil {
			return nil, fmt.Errorf("allowed_purposes[%d]: %w", i, err)
		}
	}
	if p.MaxDeadline != "" {
		d, err := time.ParseDuration(p.MaxDeadline)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("max_deadline %q: a positive Go duration such as \"72h\"", p.MaxDeadline)
		}
		p.maxDeadline = d
	}
	return &p, nil
}

// Decide applies the policy (nil: allow all).
func (p *Policy) Decide(in contracts.AuthorizationInput, now time.Time) (bool, string) {
	if p == nil {
		return true, ""
	}
	if slices.Contains(p.RevokedWorkflowIDs, in.LocalWorkflowID) {
		return false, fmt.Sprintf("local_workflow_id %q is revoked by the policy", in.LocalWorkflowID)
	}
	if len(p.AllowedAgentOrigins) > 0 && !slices.Contains(p.AllowedAgentOrigins, in.AgentOrigin) {
		return false, fmt.Sprintf("agent origin %s is not in allowed_agent_origins", in.AgentOrigin)
	}
	if len(p.AllowedSkills) > 0 && !slices.Contains(p.AllowedSkills, in.Skill) {
		return false, fmt.Sprintf("skill %q is not in allowed_skills", in.Skill)
	}
	if len(p.AllowedPurposes) > 0 && !slices.ContainsFunc(p.AllowedPurposes, func(pat string) bool {
		ok, _ := path.Match(pat, in.Purpose)
		return ok
	}) {
		return false, "the purpose matches none of allowed_purposes"
	}
	if p.maxDeadline > 0 && in.Deadline.Sub(now) > p.maxDeadline {
		return false, fmt.Sprintf("the deadline is more than max_deadline %s away", p.MaxDeadline)
	}
	return true, ""
}

// PolicyFile is a policy read from a file and read again when the file
// changes (size or modification time). Safe for concurrent use.
type PolicyFile struct {
	Path string

	mu      sync.Mutex
	stamp   string
	policy  *Policy
	version string
}

// Current returns the policy as the file says now. A file that cannot be
// read or parsed is an error: the check fails closed.
func (f *PolicyFile) Current() (*Policy, string, error) {
	if f == nil || f.Path == "" {
		return nil, "allow-all", nil
	}
	st, err := os.Stat(f.Path)
	if err != nil {
		return nil, "", fmt.Errorf("policy %s: %w", f.Path, err)
	}
	stamp := fmt.Sprintf("%d/%d", st.Size(), st.ModTime().UnixNano())
	f.mu.Lock()
	defer f.mu.Unlock()
	if stamp == f.stamp && f.policy != nil {
		return f.policy, f.version, nil
	}
	raw, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, "", fmt.Errorf("policy %s: %w", f.Path, err)
	}
	p, err := ParsePolicy(raw)
	if err != nil {
		return nil, "", fmt.Errorf("policy %s: %w", f.Path, err)
	}
	sum := sha256.Sum256(raw)
	f.stamp, f.policy, f.version = stamp, p, "sha256:"+hex.EncodeToString(sum[:])
	return p, f.version, nil
}

// CheckAuthorization decides, from the worker's policy file read now (it
// is reloaded when it changes), whether the delegation may send its next
// message. A policy that cannot be read denies (fails closed). It never
// returns an error for a denial: the decision is data for the workflow.
func (a *Activities) CheckAuthorization(ctx context.Context, in contracts.AuthorizationInput) (contracts.AuthorizationDecision, error) {
	p, version, err := a.Policy.Current()
	if err != nil {
		a.log(ctx).Error("policy unreadable: denying")
		return contracts.AuthorizationDecision{Allowed: false, Reason: "the policy file cannot be read: " + err.Error(), Policy: "unreadable"}, nil
	}
	ok, reason := p.Decide(in, time.Now())
	if !ok {
		a.log(ctx).Warn("authorization denied", "round", in.Round, "category", "authorization")
	}
	return contracts.AuthorizationDecision{Allowed: ok, Reason: reason, Policy: version}, nil
}
