package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/projections/queries"
)

// pageSize is how many rows a list page shows.
const pageSize = 25

var funcs = template.FuncMap{
	"money":      money,
	"when":       func(t queries.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"title":      func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	"last4":      func(s string) string { return s[max(0, len(s)-4):] },
	"formKey":    newFormKey,
	"list":       func(items ...string) []string { return items },
	"trimDollar": func(s string) string { return strings.TrimPrefix(s, "$") },
	"whenPtr": func(t *queries.Time) string {
		if t == nil {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"deref": func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	},
}

// money is cents as dollars: 123456 → $1,234.56.
func money(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	dollars := fmt.Sprint(cents / 100)
	var b strings.Builder
	for i, d := range dollars {
		if i > 0 && (len(dollars)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return fmt.Sprintf("%s$%s.%02d", sign, b.String(), cents%100)
}

// page reads a list page's cursor.
func page(r *http.Request) (queries.Page, error) {
	p := queries.Page{Limit: pageSize}
	if cur := r.URL.Query().Get("cursor"); cur != "" {
		after, err := queries.DecodeCursor(cur)
		if err != nil {
			return p, err
		}
		p.After = after
	}
	return p, nil
}

// idempotency is a creating form's idempotency: the form carries a key
// made when the page was rendered (newFormKey), so a second submission of
// the same form (a double click, a reload) answers with what the first
// did instead of doing it twice. A form without one has none.
func idempotency(r *http.Request, s *session, operation string) *app.Idempotency {
	key := r.PostFormValue("idempotency_key")
	if key == "" || len(key) > 100 {
		return nil
	}
	form := url.Values{}
	for k, v := range r.PostForm {
		if k != "csrf" && k != "idempotency_key" {
			form[k] = v
		}
	}
	return &app.Idempotency{Scope: s.platformID, Environment: s.env.String(), Key: "console_" + key,
		Operation: operation, RequestHash: hashOf(form.Encode())}
}

// newFormKey is a creating form's idempotency key.
func newFormKey() string { return token() }

// cents reads a dollar amount typed in a form ("1,250.50", "$12") as
// cents; more than two decimals, or not a positive amount, is a 400.
func cents(s string) (int64, error) {
	d, err := decimal.NewFromString(strings.NewReplacer("$", "", ",", "", " ", "").Replace(s))
	if err != nil || d.Exponent() < -2 && !d.Equal(d.Round(2)) || d.GreaterThan(decimal.New(1, 12)) {
		return 0, domain.Invalid("amount", "amount is dollars and cents, such as 1250.50")
	}
	if !d.IsPositive() {
		return 0, domain.Invalid("amount", "amount must be more than zero")
	}
	return d.Shift(2).IntPart(), nil
}
