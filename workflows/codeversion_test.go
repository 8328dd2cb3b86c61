package workflows

import (
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/a2adelegate/delegate/contracts"
)

// upserts records the values of search attribute DelegationCodeVersion
// the workflow upserts, one entry per upsert ("" for an upsert without
// it).
func (s *DelegationSuite) upserts() *[]string {
	var got []string
	s.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		v, _ := args.Get(0).(temporal.SearchAttributes).GetKeyword(SearchDelegationCodeVersion)
		got = append(got, v)
	}).Return(nil)
	return &got
}

// The code version that wrote a run is search attribute
// DelegationCodeVersion (Newest: the baseline until a change is listed),
// set in the run's first upsert, which a fresh run makes anyway (its
// first state): no event of its own, and set once.
func (s *DelegationSuite) TestCodeVersionIsSetInTheFirstUpsert() {
	got := s.upserts()
	s.env.OnActivity(contracts.ActivityCheckAndSend, mock.Anything, mock.Anything).Return(sent(snap("completed", claim("claim_opened"))), nil).Once()
	s.Equal(contracts.StatusCompleted, s.execute(contract()).Status)
	s.Require().NotEmpty(*got)
	s.Equal(Newest(), (*got)[0], "the first upsert")
	for i, v := range (*got)[1:] {
		s.Empty(v, "upsert %d sets it again", i+2)
	}
}

// A run continued as new starts with the search attributes of the run
// before: written by this version, nothing is upserted for it; written by
// another version (a rolling deploy), the run's first upsert corrects it.
func (s *DelegationSuite) TestCodeVersionOfACarriedRun() {
	for _, tc := range []struct {
		name, before string
		want         []string
	}{
		{"same version", Newest(), nil},
		{"another version", "older-change-v1", []string{Newest()}},
	} {
		s.Run(tc.name, func() {
			s.SetupTest()
			got := s.upserts()
			s.Require().NoError(s.env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(SearchDelegationCodeVersion.ValueSet(tc.before))))
			s.env.SetContinuedExecutionRunID("run-0")
			s.env.OnActivity(contracts.ActivityWatchTask, mock.Anything, mock.Anything).Return(snap("completed", claim("claim_opened")), nil).Once()
			s.env.ExecuteWorkflow(contracts.WorkflowType, contract(), contracts.Carry{State: carriedState(), FromRunID: "run-0", ContractDigest: contractDigest(mustJSON(contract()))})
			s.Equal(contracts.StatusCompleted, s.outcome().Status)
			var set []string
			for _, v := range *got {
				if v != "" {
					set = append(set, v)
				}
			}
			s.Equal(tc.want, set)
			if len(tc.want) > 0 {
				s.Equal(Newest(), (*got)[0], "in the run's first upsert")
			}
		})
	}
}

// A run that refuses its input records the code version that refused it.
func (s *DelegationSuite) TestCodeVersionOfARefusedRun() {
	got := s.upserts()
	d := contract()
	d.WriteAuthority = "all"
	s.env.ExecuteWorkflow(contracts.WorkflowType, d)
	s.Error(s.env.GetWorkflowError())
	s.Equal([]string{Newest()}, *got)
}
