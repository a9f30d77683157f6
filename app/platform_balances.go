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
//
// A lockable account may lack its row (a chart opened by a replica older
// than the table): unchecked, its lines would pass every bound, so the row
// is made from the log first and then locked. Only that rare case costs
// the extra statements.
func lockPlatformBalances(ctx context.Context, tx pgx.Tx, c Caller, lines []ledger.Line) (map[string]ledger.PlatformBalance, error) {
	ids := platformAccountIDs(lines)
	if len(ids) == 0 {
		return nil, nil
	}
	out := map[string]ledger.PlatformBalance{}
	if err := lockPlatformBalanceRows(ctx, tx, c, ids, out); err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	// Hot accounts stay missing: the function only makes lockable rows.
	if _, err := tx.Exec(ctx, `SELECT insert_platform_balances_from_log($1)`, missing); err != nil {
		return nil, err
	}
	return out, lockPlatformBalanceRows(ctx, tx, c, missing, out)
}

// platformAccountIDs are the sorted, distinct ledger accounts of the lines
// that are not virtual accounts.
func platformAccountIDs(lines []ledger.Line) []string {
	seen := map[string]bool{}
	var ids []string
	for _, l := range lines {
		if l.VirtualAccountID == "" && l.LedgerAccountID != "" && !seen[l.LedgerAccountID] {
			seen[l.LedgerAccountID] = true
			ids = append(ids, l.LedgerAccountID)
		}
	}
	sort.Strings(ids)
	return ids
}

// lockPlatformBalanceRows locks the existing rows of ids (sorted) into out.
func lockPlatformBalanceRows(ctx context.Context, tx pgx.Tx, c Caller, ids []string, out map[string]ledger.PlatformBalance) error {
	rows, err := tx.Query(ctx, `SELECT ledger_account_id, code, normal_balance, posted FROM platform_balances
        WHERE ledger_account_id = ANY($1) AND platform_id = $2 AND environment = $3
        ORDER BY ledger_account_id FOR UPDATE`, ids, c.PlatformID, c.Environment.String())
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, normal string
		var b ledger.PlatformBalance
		if err := rows.Scan(&id, &b.Code, &normal, &b.Posted); err != nil {
			return err
		}
		b.Normal, _ = ledger.ParseDirection(normal)
		out[id] = b
	}
	return rows.Err()
}
