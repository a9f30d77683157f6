package domain

import (
	"crypto/rand"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Id prefixes of API.md §1.
const (
	PrefixPlatform       = "plt_"
	PrefixAPIKey         = "key_"
	PrefixVirtualAccount = "va_"
	PrefixTransaction    = "txn_"
	PrefixPayment        = "pay_"
	PrefixInbound        = "itx_"
	PrefixKYB            = "kyb_"
	PrefixLedgerAccount  = "la_"
	PrefixJournalEntry   = "je_"
	PrefixLedgerEntry    = "le_"
	PrefixWebhook        = "wh_"
	PrefixEvent          = "evt_"
	PrefixDelivery       = "msg_"
	PrefixACHFile        = "achf_"
	PrefixACHReturn      = "achr_"
)

var (
	entropyMu sync.Mutex
	entropy   = ulid.Monotonic(rand.Reader, 0)
)

// NewID returns prefix + a ULID, monotonic within this process so that ids
// made in one millisecond still sort in creation order.
func NewID(prefix string) string {
	entropyMu.Lock()
	defer entropyMu.Unlock()
	return prefix + strings.ToLower(ulid.MustNew(ulid.Timestamp(time.Now()), entropy).String())
}

// HasPrefix reports whether id is well formed for prefix: the prefix then a ULID.
func HasPrefix(id, prefix string) bool {
	if !strings.HasPrefix(id, prefix) {
		return false
	}
	_, err := ulid.ParseStrict(strings.ToUpper(id[len(prefix):]))
	return err == nil
}
