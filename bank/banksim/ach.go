// Package banksim plays the sponsor bank for local live trials and tests
// (API.md §10, `treasury bank-sim`): it answers the service's outbound ACH
// files with returns and notifications of change by the sandbox's magic
// destination account numbers (§5), and drops credit files for virtual
// accounts into the service's inbox.
package banksim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/opentreasury/treasury/bank/nacha"
	"github.com/opentreasury/treasury/bank/transport"
	"github.com/opentreasury/treasury/domain/rails"
)

// The outbox's subfolders: files answered, and files set aside unread.
const (
	Accepted = "accepted"
	Rejected = "rejected"
)

// NOCAccount is the destination account number answered with a
// notification of change (C01, incorrect account number) carrying
// CorrectedAccount; the entry itself settles. The returns' numbers are
// rails.SandboxOutcome's.
const (
	NOCAccount       = "4000000098"
	NOCCode          = "C01"
	CorrectedAccount = "4000000099"
)

// DefaultRouting is the bank's routing number unless set, the service's
// own default (TREASURY_ROUTING_NUMBER).
const DefaultRouting = "110000000"

// DefaultOriginatorRouting is the routing number of the bank the credits
// come from.
const DefaultOriginatorRouting = "021000021"

// PollEvery is how often Run looks in the outbox; retryAfter how long it
// waits after a failure (an unreachable SFTP server is not hammered).
const (
	PollEvery  = 200 * time.Millisecond
	retryAfter = 5 * time.Second
)

// ACH is the bank's side of the ACH file exchange. The bank reads the
// service's outbox and writes into its inbox.
//
// Each outbound file is answered once. After its answer is Put it is moved
// to accepted/ and its name and SHA-256 remembered, so the same file
// written again after a service crash (same name, same bytes) is moved
// there without a second answer. Accepted, when set, is that accepted/
// subfolder opened as a folder of its own: the record that survives a
// restart of the bank-sim, through the transport (file:// or sftp://)
// rather than behind it. The answer is a function of the file's bytes
// (its header's creation time, not the clock), so even a crash between
// the Put and the move only writes identical bytes again, which the
// service's SHA-256 check applies once.
//
// A file that does not read as NACHA is moved to rejected/ with an error
// line, unanswered, once the same bytes were seen at two polls.
type ACH struct {
	Outbox, Inbox transport.Folder
	// Accepted is Outbox's accepted/ subfolder, or nil to remember answered
	// files in memory only.
	Accepted transport.Folder
	// Routing is the bank's routing number: the answers' origin, the
	// credits' receiving DFI. Empty: DefaultRouting.
	Routing string
	// OriginatorRouting is the credits' originating bank. Empty:
	// DefaultOriginatorRouting.
	OriginatorRouting string
	Log               *slog.Logger
	// Now is the clock for credit files (time.Now when nil).
	Now func() time.Time

	mu       sync.Mutex
	answered map[string]string // outbox file name → SHA-256, answered by this process
	// unreadable holds, by name, the SHA-256 of a file that did not read:
	// the same bytes on the next poll are rejected (a file copied in by
	// hand, not Put, may be half written the first time).
	unreadable map[string]string
	stats      Stats
	received   []ServiceReturn
	// credit files' sequence and last trace sequence, so that files of one
	// process share neither names nor trace numbers
	creditFiles int
	lastTrace   int
}

// Stats counts what the bank-sim did since it started.
type Stats struct {
	Files      int // outbound files taken
	Returned   int // entries answered with a return
	Changed    int // entries answered with a notification of change
	Settled    int // entries left to settle
	Duplicates int // files sent again, not answered again
	Rejected   int // files set aside unread
}

// ServiceReturn is an entry of the service's file that is itself a return
// (addenda 99: a credit it could not apply) or a notification of change:
// recorded, never answered.
type ServiceReturn struct {
	File          string // the outbox file's name
	Addenda       string // 99 or 98
	Code          string
	OriginalTrace string
	TraceNumber   string
	AccountNumber string
	Amount        int64
}

// Stats is what the bank-sim did so far.
func (a *ACH) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// ServiceReturns are the returns the service sent, oldest first.
func (a *ACH) ServiceReturns() []ServiceReturn {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ServiceReturn(nil), a.received...)
}

func (a *ACH) log() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

func (a *ACH) routing() (string, error) {
	r := a.Routing
	if r == "" {
		r = DefaultRouting
	}
	if !rails.ValidABA(r) {
		return "", fmt.Errorf("banksim: routing number %q is not a 9-digit ABA routing number", r)
	}
	return r, nil
}

// IsOutboundName says whether name is one of the service's ACH files
// (ach-YYYYMMDD-HHMMSS-<modifier>.ach).
func IsOutboundName(name string) bool {
	return strings.HasPrefix(name, "ach-") && strings.HasSuffix(name, ".ach")
}

// AnswerName is the inbox file that answers an outbox file.
func AnswerName(outboxName string) string {
	return "return-" + strings.TrimSuffix(outboxName, ".ach") + ".ach"
}

// Poll answers every new file in the outbox, oldest name first, and says
// how many it took (answered or needing no answer; files sent again and
// rejected ones are not counted).
func (a *ACH) Poll(ctx context.Context) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	routing, err := a.routing()
	if err != nil {
		return 0, err
	}
	names, err := a.Outbox.List(ctx) // List leaves out dot-files and subfolders
	if err != nil {
		return 0, err
	}
	var accepted map[string]bool // listed when first needed
	taken := 0
	for _, name := range names {
		if !IsOutboundName(name) {
			continue
		}
		data, err := a.Outbox.Get(ctx, name)
		if errors.Is(err, transport.ErrTooLarge) {
			if err := a.reject(ctx, name, err); err != nil {
				return taken, err
			}
			continue
		}
		if err != nil {
			return taken, err
		}
		sum := sha256.Sum256(data)
		hash := hex.EncodeToString(sum[:])
		before, seen := a.answered[name]
		if !seen && a.Accepted != nil {
			if accepted == nil {
				if accepted, err = a.acceptedNames(ctx); err != nil {
					return taken, err
				}
			}
			if accepted[name] {
				old, err := a.Accepted.Get(ctx, name)
				if err != nil {
					return taken, err
				}
				s := sha256.Sum256(old)
				before, seen = hex.EncodeToString(s[:]), true
			}
		}
		if seen {
			if err := a.again(ctx, name, hash, before); err != nil {
				return taken, err
			}
			continue
		}
		file, err := nacha.Parse(data)
		if err != nil {
			if a.unreadable[name] != hash {
				if a.unreadable == nil {
					a.unreadable = map[string]string{}
				}
				a.unreadable[name] = hash
				a.log().Warn("bank-sim: outbound file does not read (yet): will look again", "file", name, "err", err)
				continue
			}
			delete(a.unreadable, name)
			if err := a.reject(ctx, name, err); err != nil {
				return taken, err
			}
			continue
		}
		delete(a.unreadable, name)
		answer, tally, err := a.answer(name, file, routing)
		if err != nil { // a field the answer cannot carry: set aside, not left to block the files after it
			if err := a.reject(ctx, name, fmt.Errorf("no answer can be written: %w", err)); err != nil {
				return taken, err
			}
			continue
		}
		if answer != nil {
			if err := a.Inbox.Put(ctx, AnswerName(name), answer); err != nil {
				return taken, err
			}
			a.log().Info("bank-sim: answer dropped in the inbox", "file", name, "answer", AnswerName(name), "inbox", a.Inbox.String())
		}
		if err := a.Outbox.Move(ctx, name, Accepted); err != nil {
			return taken, err
		}
		if a.answered == nil {
			a.answered = map[string]string{}
		}
		a.answered[name] = hash
		a.stats.Files++
		a.stats.Returned += tally.Returned
		a.stats.Changed += tally.Changed
		a.stats.Settled += tally.Settled
		a.received = append(a.received, tally.received...)
		taken++
	}
	return taken, nil
}

// acceptedNames lists accepted/: missing, it is empty (an SFTP folder is
// made by the first Move).
func (a *ACH) acceptedNames(ctx context.Context) (map[string]bool, error) {
	names, err := a.Accepted.List(ctx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set, nil
}

// again sets aside a file answered before: the same bytes joins its copy
// in accepted/; other bytes under an answered name are no file a bank
// takes, and go to rejected/.
func (a *ACH) again(ctx context.Context, name, hash, before string) error {
	a.stats.Duplicates++
	if hash != before {
		a.log().Error("bank-sim: an answered file written again with other bytes: set aside, not answered",
			"file", name, "sha256", hash, "answered_sha256", before)
		return a.Outbox.Move(ctx, name, Rejected)
	}
	a.log().Info("bank-sim: file sent again: answered before, not again", "file", name, "sha256", hash)
	return a.Outbox.Move(ctx, name, Accepted)
}

func (a *ACH) reject(ctx context.Context, name string, why error) error {
	a.log().Error("bank-sim: outbound file set aside, not answered", "file", name, "err", why)
	a.stats.Rejected++
	return a.Outbox.Move(ctx, name, Rejected)
}

// answerKey is one batch of an answer: the returns or the changes, of one
// original batch, from one receiving bank (the batch's originator).
type answerKey struct {
	batch int
	noc   bool
	rdfi  string
}

// tally is what answering a file did, counted once the file is taken.
type tally struct {
	Stats
	received []ServiceReturn
}

// answer is the inbox file answering f, or nil when every entry settles.
func (a *ACH) answer(name string, f nacha.File, routing string) ([]byte, tally, error) {
	var t tally
	var keys []answerKey
	batches := map[answerKey]*nacha.Batch{}
	seq := 0
	for bi, b := range f.Batches {
		for _, e := range b.Entries {
			if ad := e.Addenda; ad != nil && (ad.Type == nacha.AddendaReturn || ad.Type == nacha.AddendaNOC) {
				t.received = append(t.received, ServiceReturn{File: name, Addenda: ad.Type, Code: ad.Code,
					OriginalTrace: ad.OriginalTrace, TraceNumber: e.TraceNumber, AccountNumber: e.AccountNumber, Amount: e.Amount})
				a.log().Info("bank-sim: the service returned an entry: recorded, not answered", "file", name,
					"addenda", ad.Type, "code", ad.Code, "original_trace", ad.OriginalTrace, "account_number", e.AccountNumber, "amount", e.Amount)
				continue
			}
			code := rails.SandboxOutcome(rails.ACHStandard, e.AccountNumber)
			noc := code == "" && e.AccountNumber == NOCAccount
			returnCode, ok := returnTransactionCode(e.TransactionCode)
			if code == "" && !noc || !ok {
				t.Settled++
				continue
			}
			key := answerKey{batch: bi, noc: noc, rdfi: e.RDFI}
			ab := batches[key]
			if ab == nil {
				h := b.Header
				sec := h.SEC
				if noc {
					sec = "COR"
				}
				ab = &nacha.Batch{Header: nacha.BatchHeader{
					CompanyName: h.CompanyName, CompanyDiscretionary: h.CompanyDiscretionary, CompanyID: h.CompanyID,
					SEC: sec, EntryDescription: h.EntryDescription, DescriptiveDate: h.DescriptiveDate,
					EffectiveDate: h.EffectiveDate, SettlementDate: julian(h.EffectiveDate), OriginatorStatus: '1',
					ODFI: e.RDFI, // the receiving bank sends the answer back
				}}
				batches[key] = ab
				keys = append(keys, key)
			}
			seq++
			trace := e.RDFI + fmt.Sprintf("%07d", seq)
			ans := nacha.Entry{TransactionCode: returnCode, RDFI: b.Header.ODFI, CheckDigit: nacha.CheckDigit(b.Header.ODFI),
				AccountNumber: e.AccountNumber, Amount: e.Amount, IdentificationNumber: e.IdentificationNumber,
				Name: e.Name, TraceNumber: trace}
			if noc {
				ans.Amount = 0
				ans.Addenda = &nacha.Addenda{Type: nacha.AddendaNOC, Code: NOCCode, OriginalTrace: e.TraceNumber,
					OriginalRDFI: e.RDFI, CorrectedData: CorrectedAccount, TraceNumber: trace}
				t.Changed++
				t.Settled++ // a change does not stop the entry
				a.log().Info("bank-sim: notification of change", "file", name, "trace", e.TraceNumber, "code", NOCCode,
					"corrected_data", CorrectedAccount)
			} else {
				ans.Addenda = &nacha.Addenda{Type: nacha.AddendaReturn, Code: code, OriginalTrace: e.TraceNumber,
					OriginalRDFI: e.RDFI, Information: reason(code), TraceNumber: trace}
				t.Returned++
				a.log().Info("bank-sim: entry returned", "file", name, "trace", e.TraceNumber, "code", code,
					"account_number", e.AccountNumber, "amount", e.Amount)
			}
			ab.Entries = append(ab.Entries, ans)
		}
	}
	if len(keys) == 0 {
		return nil, t, nil
	}
	out := nacha.File{Header: nacha.FileHeader{
		ImmediateDestination: f.Header.ImmediateOrigin, ImmediateOrigin: routing,
		CreatedAt: f.Header.CreatedAt, IDModifier: f.Header.IDModifier,
		DestinationName: f.Header.OriginName, OriginName: "BANK SIM", ReferenceCode: "RETURNS",
	}}
	for i, k := range keys {
		b := batches[k]
		b.Header.Number = i + 1
		b.Header.ServiceClass = nacha.ServiceClassOf(b.Entries)
		out.Batches = append(out.Batches, *b)
	}
	data, err := nacha.Marshal(out)
	return data, t, err
}

// returnTransactionCode is the code of a return or change of an entry of
// code c: 21 for 22 (and its prenote 23), 26 for 27, 31 for 32 and so on.
// An entry that is itself a return has none.
func returnTransactionCode(c int) (int, bool) {
	switch c % 10 {
	case 2, 3, 4:
		return c - c%10 + 1, nacha.IsCredit(c)
	case 5, 7, 8, 9:
		return c - c%10 + 6, nacha.IsDebit(c)
	}
	return 0, false
}

// reason is a return's addenda information: the returns table's reason,
// as NACHA text.
func reason(code string) string {
	return nachaText(rails.FailureFor(rails.ACHStandard, code).Reason, 44)
}

// julian is the settlement date an ACH operator writes: the day of the
// year, three digits.
func julian(t time.Time) string { return fmt.Sprintf("%03d", t.YearDay()) }

// nachaText is s upper-cased, printable ASCII, at most width characters.
func nachaText(s string, width int) string {
	b := []byte(strings.ToUpper(s))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = ' '
		}
	}
	if len(b) > width {
		b = b[:width]
	}
	return strings.TrimRight(string(b), " ")
}

// Run polls the outbox every PollEvery until ctx ends.
func (a *ACH) Run(ctx context.Context) {
	for {
		wait := PollEvery
		if _, err := a.Poll(ctx); err != nil && ctx.Err() == nil {
			a.log().Error("bank-sim: outbox not read: will try again", "err", err, "in", retryAfter)
			wait = retryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
