package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"testing"
)

// After any 2xx write the same platform's lists show it: a journal entry
// in the account's ledger entries, a payment in its transactions and in
// the events, an inbound transfer in its transactions. Several clients
// write and list at once, 1,000 times in all, against the whole service
// (its projections run asynchronously); not one list may miss its write.
func TestReadYourWritesUnderConcurrentWriters(t *testing.T) {
	// Other test packages share this PostgreSQL server, and a long
	// transaction in any of its databases holds back every reader of the
	// log: a bound far above the service's default keeps their pauses from
	// counting as misses here.
	r := ftStartWith(t, emptyDatabase(t), "TREASURY_READ_YOUR_WRITES_WAIT=1m")
	const workers, rounds = 8, 125
	r.openAccounts(workers, 100_000_000)

	type entryList struct {
		Data []struct {
			JournalEntryID string `json:"journal_entry_id"`
		} `json:"data"`
	}
	type txnList struct {
		Data []struct {
			Source struct {
				ID string `json:"id"`
			} `json:"source"`
		} `json:"data"`
	}
	type eventList struct {
		Data []struct {
			Data struct {
				Object struct {
					ID string `json:"id"`
				} `json:"object"`
			} `json:"data"`
		} `json:"data"`
	}
	misses := newRYWMisses(t)
	miss, created := misses.miss, r.created
	list := func(path string, into any) bool {
		res, err := r.do(http.MethodGet, path, nil)
		if err != nil || res.Status != http.StatusOK {
			t.Errorf("GET %s: %v %s", path, err, res)
			return false
		}
		return json.Unmarshal(res.Body, into) == nil
	}
	transactionsShow := func(va, source string) bool {
		var l txnList
		if !list("/v1/virtual-accounts/"+va+"/transactions?limit=10", &l) {
			return false
		}
		for _, x := range l.Data {
			if x.Source.ID == source {
				return true
			}
		}
		return false
	}

	var wg sync.WaitGroup
	for w := range workers {
		va := r.accounts[w]
		wg.Go(func() {
			for i := range rounds {
				switch i % 3 {
				case 0:
					je := created("/v1/ledger/entries", map[string]any{"type": "fee", "description": "read your writes",
						"virtual_account_id": va, "direction": "debit", "amount": 1})
					var l entryList
					if je != "" && list("/v1/ledger/entries?virtual_account_id="+va+"&limit=1", &l) &&
						(len(l.Data) == 0 || l.Data[0].JournalEntryID != je) {
						miss("journal entry", "%s is not the newest entry of %s", je, va)
					}
				case 1:
					pay := created("/v1/payments", map[string]any{"virtual_account_id": va, "amount": 100, "rail": "rtp",
						"idempotency_key": fmt.Sprintf("ryw-%d-%d", w, i), "description": "read your writes",
						"destination": map[string]any{"account_number": "987654321", "routing_number": "021000021", "name": "Vendor"}})
					if pay == "" {
						continue
					}
					if !transactionsShow(va, pay) {
						miss("payment transaction", "payment %s is not among %s's transactions", pay, va)
					}
					var l eventList
					found := false
					if list("/v1/events?type=payment.created&limit=100", &l) {
						for _, e := range l.Data {
							found = found || e.Data.Object.ID == pay
						}
					}
					if !found {
						miss("payment event", "payment.created of %s is not among the newest events", pay)
					}
				case 2:
					in := created("/v1/simulations/inbound-transfers", map[string]any{"virtual_account_id": va,
						"amount": 250, "rail": "rtp", "originator": ftOriginator})
					if in != "" && !transactionsShow(va, in) {
						miss("inbound transfer", "%s is not among %s's transactions", in, va)
					}
				}
			}
		})
	}
	wg.Wait()
	if m := misses.counts(); len(m) > 0 {
		t.Errorf("lists that missed the write just made: %v of %d writes", m, workers*rounds)
	}
}

// rywMisses counts the lists that missed the write made just before them,
// by kind, and reports the first three of each kind (from any goroutine).
type rywMisses struct {
	t      *testing.T
	mu     sync.Mutex
	byKind map[string]int
}

func newRYWMisses(t *testing.T) *rywMisses { return &rywMisses{t: t, byKind: map[string]int{}} }

func (m *rywMisses) miss(kind, format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byKind[kind] < 3 {
		m.t.Errorf(kind+": "+format, args...)
	}
	m.byKind[kind]++
}

// counts is the misses so far, by kind.
func (m *rywMisses) counts() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.byKind)
}

// created makes a platform POST that must answer 201 and returns the new
// resource's id ("" on failure, reported).
func (r *ftRig) created(path string, body any) string {
	res, err := r.do(http.MethodPost, path, body)
	if err != nil || res.Status != http.StatusCreated {
		r.t.Errorf("POST %s: %v %s", path, err, res)
		return ""
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(res.Body, &v); err != nil {
		r.t.Errorf("POST %s: %v", path, err)
	}
	return v.ID
}
