package app

import (
	"context"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain/ledger"
)

// checkPlatformAccounts locks the balance rows of the lockable platform
// accounts the lines touch and refuses lines that would take one past its
// bound or, in live, below zero.
func checkPlatformAccounts(ctx context.Context, tx pgx.Tx, c Caller, lines []ledger.Line) error {
	locked, err := lockPlatformBalances(ctx, tx, c, lines)
	if err != nil || len(locked) == 0 {
		return err
	}
	return ledger.CheckPlatformBalances(locked, lines, c.Environment)
}

// lockPlatformBalances locks (in id order, so two commands never wait on
// each other in a cycle) the platform_balances rows of the accounts the
// lines post to, and returns them by ledger account id. Accounts without a
// row (the hot, lock-free ones) are not in the map.
func lockPlatformBalances(ctx context.Context, tx pgx.Tx, c Caller, lines []ledger.Line) (map[string]ledger.PlatformBalance, error) {
	seen := map[string]bool{}
	var ids []string
	for _, l := range lines {
		if l.VirtualAccountID == "" && l.LedgerAccountID != "" && !seen[l.LedgerAccountID] {
			seen[l.LedgerAccountID] = true
			ids = append(ids, l.LedgerAccountID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	sort.Strings(ids)
	rows, err := tx.Query(ctx, `SELECT ledger_account_id, code, normal_balance, posted FROM platform_balances
        WHERE ledger_account_id = ANY($1) AND platform_id = $2 AND environment = $3
        ORDER BY ledger_account_id FOR UPDATE`, ids, c.PlatformID, c.Environment.String())
	if err != nil {
		return nil, err
	}
	out := map[string]ledger.PlatformBalance{}
	for rows.Next() {
		var id, code, normal string
		var b ledger.PlatformBalance
		if err := rows.Scan(&id, &code, &normal, &b.Posted); err != nil {
			rows.Close()
			return nil, err
		}
		b.Code = code
		b.Normal, _ = ledger.ParseDirection(normal)
		out[id] = b
	}
	return out, rows.Err()
}
