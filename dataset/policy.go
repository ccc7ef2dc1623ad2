package dataset

import (
	"fmt"
	"math/rand/v2"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/statetree"
)

// Sampler draws one debugging trajectory over a state tree. It returns the
// trajectory and, per step, the horizon (statetree.Horizon) of its action.
// It must be safe for concurrent use; randomness comes from r.
type Sampler func(t *statetree.Tree, r *rand.Rand) (*dsl.Trajectory, []int, error)

// PolicySampler is statetree's stochastic policy with parameters p, as a
// Sampler.
func PolicySampler(p statetree.Params) (Sampler, error) {
	s, err := statetree.NewSampler(p)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return func(t *statetree.Tree, r *rand.Rand) (*dsl.Trajectory, []int, error) {
		smp, err := s.Sample(t, r)
		if err != nil {
			return nil, nil, err
		}
		return &smp.Trajectory, smp.Horizons, nil
	}, nil
}
