package projections

import (
	"maps"
	"slices"

	"github.com/opentreasury/treasury/domain/ledger"
)

// PlatformBalances projects the locked balance rows of the lockable
// platform accounts (ledger.Lockable): a row when the chart names the
// account, and the posted lines of the only entries that reach these
// accounts: manual entries, fundings, and payment reversals (a return to
// a closed account goes to platform_operating). Other payment lines are
// never looked at, so the payment path queues no statement here.
type PlatformBalances struct{}

func (PlatformBalances) Name() string     { return "platform_balances" }
func (PlatformBalances) Tables() []string { return []string{"platform_balances"} }

// Project inserts the rows of charts opened in the batch and adds each
// account's summed postings (credit minus debit) in one UPDATE, which
// turns them to the account's normal direction.
func (PlatformBalances) Project(b *Batch) error {
	net := map[string]int64{}
	add := func(lines []ledger.Line) {
		for _, l := range lines {
			if l.VirtualAccountID != "" || !reachesLockable(l.Type) {
				continue
			}
			if l.Direction == ledger.Credit {
				net[l.LedgerAccountID] += l.Amount
			} else {
				net[l.LedgerAccountID] -= l.Amount
			}
		}
	}
	for i := range b.Events {
		r := &b.Events[i]
		ev, err := r.Decode()
		if err != nil {
			return err
		}
		switch e := ev.(type) {
		case ledger.ChartOpened:
			insertPlatformBalances(b, e)
		case ledger.Recorded:
			if e.Status == ledger.StatusPosted {
				add(e.Lines)
			}
		case ledger.Posted:
			add(e.Lines)
		}
	}
	addPlatformBalances(b, net)
	return nil
}

func insertPlatformBalances(b *Batch, e ledger.ChartOpened) {
	for code, id := range e.Accounts {
		if ledger.Lockable(code) {
			b.Queue(`INSERT INTO platform_balances (ledger_account_id, platform_id, environment, code, normal_balance)
                VALUES ($1, $2, $3, $4, $5)`, id, e.PlatformID, e.Environment.String(), code, ledger.NormalBalance(code).String())
		}
	}
}

// addPlatformBalances adds the batch's net postings. Accounts that have no
// row are left alone by the join: the hot ones never get one, and the
// first command that locks a lockable one makes it from the log
// (insert_platform_balances_from_log), which holds these lines too.
func addPlatformBalances(b *Batch, net map[string]int64) {
	if len(net) == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(net))
	amounts := make([]int64, len(ids))
	for i, id := range ids {
		amounts[i] = net[id]
	}
	// Rows locked in id order first, as commands lock them.
	b.Queue(`SELECT 1 FROM platform_balances WHERE ledger_account_id = ANY($1) ORDER BY ledger_account_id FOR UPDATE`, ids)
	b.Queue(`UPDATE platform_balances p
        SET posted = p.posted + CASE WHEN p.normal_balance = 'credit' THEN d.net ELSE -d.net END
        FROM unnest($1::text[], $2::bigint[]) d(id, net) WHERE p.ledger_account_id = d.id`, ids, amounts)
}

func reachesLockable(lineType string) bool {
	return ledger.IsManualType(lineType) || lineType == ledger.TypeFunding || lineType == ledger.TypePaymentReversal
}
