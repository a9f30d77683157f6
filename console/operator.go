package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/projections/queries"
)

type platformsData struct {
	List queries.List[queries.PlatformView]
	// Secret is the sandbox key an approval just minted, shown once.
	Secret string
}

func (c *Console) platforms(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderPlatforms(w, r, s, "", "")
}

func (c *Console) renderPlatforms(w http.ResponseWriter, r *http.Request, s *session, flash, secret string) {
	ctx := r.Context()
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	d := platformsData{Secret: secret}
	if d.List, err = queries.ListPlatforms(ctx, c.pool, p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "platforms", view{Title: "Platforms", Session: s, Nav: "platforms", Flash: flash, Data: d})
}

// approvePlatform approves a platform and shows its first sandbox key
// once, on the page the form posted to (never in a URL).
func (c *Console) approvePlatform(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	res, err := c.cfg.App.ApprovePlatform(ctx, meta(r, s), r.PathValue("id"))
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.renderPlatforms(w, r, s, "Platform approved. Its sandbox key is shown once, below.", res.Secret)
}

type platformData struct {
	Platform queries.PlatformView
	Rails    []string
	// Secret is the live key enabling live just minted, shown once.
	Secret string
}

func (c *Console) platform(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderPlatform(w, r, s, r.PathValue("id"), "", "")
}

func (c *Console) renderPlatform(w http.ResponseWriter, r *http.Request, s *session, id, flash, secret string) {
	ctx := r.Context()
	d := platformData{Secret: secret}
	for _, rail := range rails.All {
		d.Rails = append(d.Rails, rail.String())
	}
	var err error
	if d.Platform, err = queries.GetPlatform(ctx, c.pool, id); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "platform", view{Title: d.Platform.Name, Session: s, Nav: "platforms", Flash: flash, Data: d})
}

// enableLive opens a platform's live environment and shows its first
// live key once.
func (c *Console) enableLive(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	res, err := c.cfg.App.EnableLive(ctx, meta(r, s), id)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.renderPlatform(w, r, s, id, "Live enabled. Its live key is shown once, below.", res.Secret)
}

// configurePlatform sets a platform's configuration from its form — the
// fee schedule (dollars per payment, by rail), the revenue share and
// interest rates, the rate limit (both fields empty: the defaults) — as
// PATCH /v1/operator/platforms/:id does, the platform's rules deciding.
func (c *Console) configurePlatform(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	patch, err := configPatch(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.answer(w, r, s, c.cfg.App.ConfigurePlatform(ctx, meta(r, s), id, patch), "/console/platforms/"+id, "Configuration saved.")
}

// configPatch reads the platform form.
func configPatch(r *http.Request) (platform.ConfigPatch, error) {
	var patch platform.ConfigPatch
	fees := map[string]int64{}
	for _, rail := range rails.All {
		v := strings.TrimSpace(r.PostFormValue("fee_" + rail.String()))
		if v == "" {
			continue
		}
		n, err := cents(v)
		if d, zero := decimal.NewFromString(strings.NewReplacer("$", "", ",", "").Replace(v)); zero == nil && d.IsZero() {
			n, err = 0, nil
		}
		if err != nil {
			return patch, domain.Invalid("fee_schedule."+rail.String(), "the %s fee is dollars and cents, such as 0.25", rail)
		}
		fees[rail.String()] = n
	}
	patch.FeeSchedule = domain.Optional[map[string]int64]{Set: true, Value: &fees}
	for field, opt := range map[string]*domain.Optional[string]{"revenue_share_rate": &patch.RevenueShareRate, "interest_rate": &patch.InterestRate} {
		if v := strings.TrimSpace(r.PostFormValue(field)); v != "" {
			*opt = domain.Optional[string]{Set: true, Value: &v}
		}
	}
	perSecond, burst := strings.TrimSpace(r.PostFormValue("rate_per_second")), strings.TrimSpace(r.PostFormValue("rate_burst"))
	patch.RateLimit.Set = true
	if perSecond != "" || burst != "" {
		ps, err1 := strconv.Atoi(perSecond)
		b, err2 := strconv.Atoi(burst)
		if err1 != nil || err2 != nil {
			return patch, domain.Invalid("rate_limit", "a rate limit is two whole numbers: requests per second and a burst")
		}
		patch.RateLimit.Value = &platform.RateLimit{PerSecond: ps, Burst: b}
	}
	return patch, nil
}

type reviewsData struct {
	List queries.List[queries.KYBReviewView]
}

// reviews is the operator's KYB review queue: every platform's
// verifications waiting for a person, the longest waiting first.
func (c *Console) reviews(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	var d reviewsData
	if d.List, err = queries.ListKYBReviews(ctx, c.pool, p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "reviews", view{Title: "KYB review queue", Session: s, Nav: "reviews", Data: d})
}

func (c *Console) decideReview(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	d, err := decision(r, r.PathValue("id"))
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.answer(w, r, s, c.cfg.App.DecideKYB(ctx, meta(r, s), nil, d), "/console/reviews", "Verification "+d.Outcome+".")
}

type achFilesData struct {
	List queries.List[queries.ACHFileView]
}

// achFiles lists live mode's outbound ACH files, newest first.
func (c *Console) achFiles(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	var d achFilesData
	if d.List, err = queries.ListACHFiles(ctx, c.pool, p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "ach_files", view{Title: "Live ACH files", Session: s, Nav: "ach", Data: d})
}
