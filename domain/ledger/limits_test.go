package ledger_test

import (
	"math"
	"testing"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
)

func TestCheckLimits(t *testing.T) {
	max := ledger.MaxBalance
	cases := []struct {
		name   string
		before ledger.Balance
		lines  []ledger.Line
		code   domain.Code
	}{
		{"up to the bound", ledger.Balance{Posted: max - 10}, []ledger.Line{credit("a", 10), debit("x", 10)}, ""},
		{"past the bound", ledger.Balance{Posted: max - 10}, []ledger.Line{credit("a", 11), debit("x", 11)}, domain.CodeLimitExceeded},
		{"pending inbound counts", ledger.Balance{Posted: max - 10, PendingInbound: 10}, []ledger.Line{credit("a", 1), debit("x", 1)}, domain.CodeLimitExceeded},
		{"several credits summed", ledger.Balance{}, []ledger.Line{credit("a", max), credit("a", 1), debit("x", max+1)}, domain.CodeLimitExceeded},
		{"a debit is never refused", ledger.Balance{Posted: max + 5}, []ledger.Line{debit("a", 1), credit("x", 1)}, ""},
		{"overflowing legacy balance", ledger.Balance{Posted: math.MaxInt64 - 1}, []ledger.Line{credit("a", 5), debit("x", 5)}, domain.CodeLimitExceeded},
		{"overflowing credits", ledger.Balance{}, []ledger.Line{credit("a", math.MaxInt64), credit("a", math.MaxInt64)}, domain.CodeLimitExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ledger.CheckLimits(map[string]ledger.Balance{"a": c.before}, c.lines)
			if c.code == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if de := wantCode(t, err, c.code, ""); de.ResourceID != "a" {
				t.Fatalf("resource_id %q, want a", de.ResourceID)
			}
		})
	}
}

func TestCheckPlatformBalances(t *testing.T) {
	max := ledger.MaxBalance
	op := func(posted int64) map[string]ledger.PlatformBalance {
		return map[string]ledger.PlatformBalance{"la_op": {Code: ledger.CodePlatformOperating, Normal: ledger.Credit, Posted: posted}}
	}
	toVA := []ledger.Line{system("op", ledger.Debit, 100), credit("a", 100)}
	fromVA := []ledger.Line{debit("a", 100), system("op", ledger.Credit, 100)}
	cases := []struct {
		name   string
		before map[string]ledger.PlatformBalance
		lines  []ledger.Line
		env    domain.Environment
		code   domain.Code
	}{
		{"live funded", op(100), toVA, domain.Live, ""},
		{"live short by a cent", op(99), toVA, domain.Live, domain.CodeInsufficientFunds},
		{"live credit to a negative legacy balance", op(-500), fromVA, domain.Live, ""},
		{"sandbox goes negative", op(0), toVA, domain.Sandbox, ""},
		{"sandbox bound below", op(-max + 99), toVA, domain.Sandbox, domain.CodeLimitExceeded},
		{"bound above", op(max - 99), fromVA, domain.Live, domain.CodeLimitExceeded},
		{"back toward the bound is allowed", op(max + 1000), toVA, domain.Live, ""},
		{"overflowing legacy balance", op(math.MaxInt64 - 1), fromVA, domain.Sandbox, domain.CodeLimitExceeded},
		{"accounts without a row are not checked", nil, toVA, domain.Live, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ledger.CheckPlatformBalances(c.before, c.lines, c.env)
			if c.code == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if de := wantCode(t, err, c.code, ""); de.ResourceID != "la_op" {
				t.Fatalf("resource_id %q, want la_op", de.ResourceID)
			}
		})
	}
}
