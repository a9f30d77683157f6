package platform_test

import (
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/domain/rails"
)

// TestSandboxDelay: ACH rails wait their configured delay; instant rails none.
func TestSandboxDelay(t *testing.T) {
	s := platform.SandboxSettings{ACHSameDayDelaySeconds: 5, ACHStandardDelaySeconds: 15}
	for rail, want := range map[rails.Rail]time.Duration{rails.ACHSameDay: 5 * time.Second, rails.ACHStandard: 15 * time.Second,
		rails.RTP: 0, rails.FedNow: 0} {
		if got := s.Delay(rail); got != want {
			t.Errorf("%s: %s, want %s", rail, got, want)
		}
	}
}
