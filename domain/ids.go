package domain

import (
	"crypto/rand"
	"crypto/sha256"
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
	PrefixBookTransfer   = "bt_"
	PrefixCounterparty   = "cp_"
	PrefixKYB            = "kyb_"
	PrefixLedgerAccount  = "la_"
	PrefixJournalEntry   = "je_"
	PrefixLedgerEntry    = "le_"
	PrefixWebhook        = "wh_"
	PrefixEvent          = "evt_"
	PrefixDelivery       = "msg_"
	PrefixReplay         = "rpl_"
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

// IDFor returns prefix + a ULID made from at and key alone: the same
// thing named twice gets the same id (an inbound ACH credit the bank
// sends again, say), and ids still sort by at.
func IDFor(prefix string, at time.Time, key string) string {
	sum := sha256.Sum256([]byte(key))
	var u ulid.ULID
	if err := u.SetTime(ulid.Timestamp(at)); err != nil {
		panic(err) // a time before 1970 or after 10889
	}
	copy(u[6:], sum[:10])
	return prefix + strings.ToLower(u.String())
}

// HasPrefix reports whether id is well formed for prefix: the prefix then a ULID.
func HasPrefix(id, prefix string) bool {
	if !strings.HasPrefix(id, prefix) {
		return false
	}
	_, err := ulid.ParseStrict(strings.ToUpper(id[len(prefix):]))
	return err == nil
}
