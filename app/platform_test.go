package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/projections/queries"
)

// assertProjectionsMatchLog folds the platform's stream and compares the
// result with every inline read model of the platform.
func assertProjectionsMatchLog(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id string) {
	t.Helper()
	s, recs := fold(t, ctx, pool, id)
	if !s.Exists() {
		t.Fatalf("platform %s: no registration in %d events", id, len(recs))
	}
	p, err := queries.GetPlatform(ctx, pool, id)
	if err != nil {
		t.Fatalf("GetPlatform(%s): %v", id, err)
	}
	if p.ID != s.ID || p.Name != s.Name || p.ContactEmail != s.ContactEmail || p.Status != s.Status.String() ||
		p.LiveEnabled != s.LiveEnabled || !p.CreatedAt.Equal(s.CreatedAt) {
		t.Errorf("platform %s: projection {name %q email %q status %q live %v created %v}, log {name %q email %q status %q live %v created %v}",
			id, p.Name, p.ContactEmail, p.Status, p.LiveEnabled, p.CreatedAt.Time,
			s.Name, s.ContactEmail, s.Status, s.LiveEnabled, s.CreatedAt)
	}
	for _, r := range []struct {
		name string
		got  string
		want decimal.Decimal
	}{{"revenue_share_rate", p.RevenueShareRate, s.Config.RevenueShareRate}, {"interest_rate", p.InterestRate, s.Config.InterestRate}} {
		if d, err := decimal.NewFromString(r.got); err != nil || !d.Equal(r.want) {
			t.Errorf("platform %s: %s = %q, log says %s", id, r.name, r.got, r.want)
		}
	}
	if !reflect.DeepEqual(p.FeeSchedule, s.Config.FeeSchedule) {
		t.Errorf("platform %s: fee_schedule = %v, log says %v", id, p.FeeSchedule, s.Config.FeeSchedule)
	}
	switch {
	case p.RateLimit == nil && s.Config.RateLimit == nil:
	case p.RateLimit == nil || s.Config.RateLimit == nil ||
		p.RateLimit.PerSecond != s.Config.RateLimit.PerSecond || p.RateLimit.Burst != s.Config.RateLimit.Burst:
		t.Errorf("platform %s: rate_limit = %+v, log says %+v", id, p.RateLimit, s.Config.RateLimit)
	}
	if !reflect.DeepEqual(p.Metadata, s.Metadata) {
		t.Errorf("platform %s: metadata = %v, log says %v", id, p.Metadata, s.Metadata)
	}

	// The list shows the same platform as the get.
	list, err := queries.ListPlatforms(ctx, pool, queries.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range list.Data {
		if q.ID == id {
			found = true
			if !reflect.DeepEqual(q, p) {
				t.Errorf("platform %s: ListPlatforms shows %+v, GetPlatform %+v", id, q, p)
			}
		}
	}
	if !found {
		t.Errorf("platform %s: missing from ListPlatforms", id)
	}

	for _, env := range []domain.Environment{domain.Sandbox, domain.Live} {
		st, err := queries.GetSettings(ctx, pool, id, env)
		if err != nil {
			t.Fatal(err)
		}
		if want := s.SettingsFor(env); !reflect.DeepEqual(st.Settings, want) {
			t.Errorf("platform %s: %s settings = %s, log says %s", id, env, asJSON(st.Settings), asJSON(want))
		}

		var all []queries.APIKeyView
		for page := (queries.Page{Limit: 100}); ; {
			keys, err := queries.ListAPIKeys(ctx, pool, id, env, page)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, keys.Data...)
			if !keys.HasMore {
				break
			}
			page.After = keys.Data[len(keys.Data)-1].ID
		}
		seen := map[string]bool{}
		for _, k := range all {
			seen[k.ID] = true
			want, ok := s.Keys[k.ID]
			if !ok || want.Environment != env {
				t.Errorf("platform %s: %s key %s is not in the log (or not of this environment)", id, env, k.ID)
				continue
			}
			if k.Name != want.Name || k.Environment != env.String() || k.PlatformID != id || !k.CreatedAt.Equal(want.CreatedAt) {
				t.Errorf("platform %s: key %s = {%q %s %s %v}, log says {%q %s %s %v}", id, k.ID,
					k.Name, k.Environment, k.PlatformID, k.CreatedAt.Time, want.Name, env, id, want.CreatedAt)
			}
			if !sameTime(k.RevokedAt, want.RevokedAt) {
				t.Errorf("platform %s: key %s revoked_at = %v, log says %v", id, k.ID, k.RevokedAt, want.RevokedAt)
			}
			if !sameTime(k.ExpiresAt, want.ExpiresAt) {
				t.Errorf("platform %s: key %s expires_at = %v, log says %v", id, k.ID, k.ExpiresAt, want.ExpiresAt)
			}
		}
		for kid, k := range s.Keys {
			if k.Environment == env && !seen[kid] {
				t.Errorf("platform %s: the log has %s key %s, ListAPIKeys does not", id, env, kid)
			}
		}
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM api_keys WHERE platform_id = $1`, id); n != len(s.Keys) {
		t.Errorf("platform %s: api_keys rows = %d, log has %d keys", id, n, len(s.Keys))
	}
}

func sameTime(got *queries.Time, want *time.Time) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return got.Equal(*want)
}

// eventRow is one platform event as stored.
type eventRow struct {
	Stream     string
	Version    int64
	Type       string
	PlatformID string
	RequestID  string
	Actor      string
	KeyID      string // data->>'key_id', for key events
	ReplacedBy string // data->>'replaced_by', for rolls
}

func platformEvents(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id string) []eventRow {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT stream_id, stream_version, event_type, coalesce(platform_id, ''),
            coalesce(metadata->>'request_id', ''), coalesce(metadata->>'actor', ''),
            coalesce(data->>'key_id', ''), coalesce(data->>'replaced_by', '')
        FROM events WHERE platform_id = $1 ORDER BY global_position`, id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[eventRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEveryCommandAppendsItsEventsWithMeta runs every platform command once
// and checks the events each appended, in order, with the request id and
// actor of the command's Meta.
func TestEveryCommandAppendsItsEventsWithMeta(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	op := func(req string) app.Meta { return app.Meta{RequestID: req, Actor: "operator"} }

	regMeta := op("req_1")
	regMeta.IdempotencyKey = "k1" // the caller passes it in Meta; it is stored with the event
	reg, err := a.RegisterPlatform(ctx, regMeta, &app.Idempotency{Scope: "operator", Environment: "live",
		Key: "k1", Operation: "register_platform", RequestHash: "h1"},
		app.RegisterPlatform{Name: "  Acme  ", ContactEmail: "ops@acme.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	id := reg.ID
	pm := func(req string) app.Meta { return app.Meta{RequestID: req, Actor: id} }

	// Refused commands append nothing.
	if _, err := a.CreateAPIKey(ctx, pm("req_refused_1"), nil, id, domain.Live, domain.Live, "early live"); domain.CodeOf(err) != domain.CodeLiveNotEnabled {
		t.Fatalf("live key before live is enabled: err = %v, want live_not_enabled", err)
	}
	if _, err := a.EnableLive(ctx, op("req_refused_2"), id); domain.CodeOf(err) != domain.CodeInvalidState {
		t.Fatalf("enable live before approval: err = %v, want invalid_state", err)
	}

	approved, err := a.ApprovePlatform(ctx, op("req_2"), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ApprovePlatform(ctx, op("req_refused_3"), id); domain.CodeOf(err) != domain.CodeInvalidState {
		t.Fatalf("approve twice: err = %v, want invalid_state", err)
	}
	if _, err := a.CreateAPIKey(ctx, pm("req_refused_4"), nil, id, domain.Sandbox, domain.Live, "from sandbox"); domain.CodeOf(err) != domain.CodeForbidden {
		t.Fatalf("live key from a sandbox caller: err = %v, want forbidden", err)
	}
	live, err := a.EnableLive(ctx, op("req_3"), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ConfigurePlatform(ctx, op("req_4"), id, platform.ConfigPatch{
		RevenueShareRate: domain.Some("0.30"), FeeSchedule: domain.Some(map[string]int64{"rtp": 75}),
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.UpdateSettings(ctx, pm("req_5"), id, domain.Live, platform.SettingsPatch{
		DailyPaymentLimit: domain.Some(int64(500_000)),
	}); err != nil {
		t.Fatal(err)
	}
	// The same PATCHes again change nothing, so they record nothing.
	if err := a.ConfigurePlatform(ctx, op("req_noop_1"), id, platform.ConfigPatch{
		RevenueShareRate: domain.Some("0.3"), FeeSchedule: domain.Some(map[string]int64{"rtp": 75}),
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.UpdateSettings(ctx, pm("req_noop_2"), id, domain.Live, platform.SettingsPatch{
		DailyPaymentLimit: domain.Some(int64(500_000)),
	}); err != nil {
		t.Fatal(err)
	}
	created, err := a.CreateAPIKey(ctx, pm("req_6"), nil, id, domain.Live, domain.Live, "server")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.RevokeAPIKey(ctx, pm("req_7"), id, domain.Live, created.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.RevokeAPIKey(ctx, pm("req_refused_5"), id, domain.Live, created.ID); err != nil {
		t.Fatalf("revoke twice: %v (revoking twice changes nothing and is not an error)", err)
	}
	if err := a.RevokeAPIKey(ctx, pm("req_refused_6"), id, domain.Sandbox, live.ID); domain.CodeOf(err) != domain.CodeNotFound {
		t.Fatalf("sandbox caller revoking a live key: err = %v, want not_found", err)
	}
	rolled, err := a.RollAPIKey(ctx, pm("req_8"), id, domain.Sandbox, approved.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	// The platform's own events in its stream, each key's in the key's.
	ps, ks := "platform-"+id, func(k app.Result) string { return "apikey-" + k.ID }
	want := []eventRow{
		{ps, 1, "platform.registered", id, "req_1", "operator", "", ""},
		{ps, 2, "platform.approved", id, "req_2", "operator", "", ""},
		{ks(approved), 1, "api_key.created", id, "req_2", "operator", approved.ID, ""},
		{ps, 3, "platform.live_enabled", id, "req_3", "operator", "", ""},
		{ks(live), 1, "api_key.created", id, "req_3", "operator", live.ID, ""},
		{ps, 4, "platform.configured", id, "req_4", "operator", "", ""},
		{ps, 5, "platform.settings_updated", id, "req_5", id, "", ""},
		{ks(created), 1, "api_key.created", id, "req_6", id, created.ID, ""},
		{ks(created), 2, "api_key.revoked", id, "req_7", id, created.ID, ""},
		{ks(rolled), 1, "api_key.created", id, "req_8", id, rolled.ID, ""},
		{ks(approved), 2, "api_key.rolled", id, "req_8", id, approved.ID, rolled.ID},
	}
	got := platformEvents(t, ctx, pool, id)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:")
		for i := range max(len(got), len(want)) {
			var g, w eventRow
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			mark := "  "
			if g != w {
				mark = "!="
			}
			t.Errorf("%s got %+v\n     want %+v", mark, g, w)
		}
	}

	var idemKey string
	if err := pool.QueryRow(ctx, `SELECT coalesce(metadata->>'idempotency_key', '') FROM events WHERE stream_id = 'platform-'||$1 AND stream_version = 1`, id).Scan(&idemKey); err != nil {
		t.Fatal(err)
	}
	if idemKey != "k1" {
		t.Errorf("registration metadata idempotency_key = %q, want the Meta's %q", idemKey, "k1")
	}

	// Spot checks of the data the events carry.
	var name, fees, env, rolledEnv string
	if err := pool.QueryRow(ctx, `SELECT data->>'name' FROM events WHERE stream_id = 'platform-'||$1 AND stream_version = 1`, id).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if name != "Acme" {
		t.Errorf("registered name = %q, want the trimmed %q", name, "Acme")
	}
	if err := pool.QueryRow(ctx, `SELECT data->'config'->>'fee_schedule' FROM events WHERE stream_id = 'platform-'||$1 AND stream_version = 4`, id).Scan(&fees); err != nil {
		t.Fatal(err)
	}
	if fees != `{"rtp": 75, "fednow": 45, "ach_same_day": 100, "ach_standard": 25}` {
		t.Errorf("configured fee_schedule = %s, want rtp 75 and the other defaults", fees)
	}
	if err := pool.QueryRow(ctx, `SELECT data->>'environment' FROM events WHERE stream_id = 'platform-'||$1 AND stream_version = 5`, id).Scan(&env); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT data->>'environment' FROM events WHERE stream_id = 'apikey-'||$1 AND stream_version = 1`, rolled.ID).Scan(&rolledEnv); err != nil {
		t.Fatal(err)
	}
	if env != "live" || rolledEnv != "sandbox" {
		t.Errorf("settings event environment = %q (want live), rolled key environment = %q (want sandbox)", env, rolledEnv)
	}
	assertProjectionsMatchLog(t, ctx, pool, id)
}

var secretFormat = map[domain.Environment]*regexp.Regexp{
	domain.Sandbox: regexp.MustCompile(`^sk_sandbox_[0-9A-Za-z]{40}$`),
	domain.Live:    regexp.MustCompile(`^sk_live_[0-9A-Za-z]{40}$`),
}

// TestAPIKeySecretsAreOnlyStoredAsHashes collects the secret of every way
// a key is minted and checks its format, that the read model and the event
// hold exactly its SHA-256, and that no table of the database holds the
// secret (nor its random part past the public 12-character prefix).
func TestAPIKeySecretsAreOnlyStoredAsHashes(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	id := register(t, ctx, a, "secrets")
	type minted struct {
		how    string
		env    domain.Environment
		result app.Result
	}
	var keys []minted
	mint := func(how string, env domain.Environment, res app.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		keys = append(keys, minted{how, env, res})
	}
	res, err := a.ApprovePlatform(ctx, operatorMeta("req_a"), id)
	mint("approve", domain.Sandbox, res, err)
	res, err = a.EnableLive(ctx, operatorMeta("req_b"), id)
	mint("enable live", domain.Live, res, err)
	res, err = a.CreateAPIKey(ctx, app.Meta{RequestID: "req_c"}, nil, id, domain.Sandbox, domain.Sandbox, "ci")
	mint("create sandbox", domain.Sandbox, res, err)
	res, err = a.CreateAPIKey(ctx, app.Meta{RequestID: "req_d"}, nil, id, domain.Live, domain.Live, "prod")
	mint("create live", domain.Live, res, err)
	res, err = a.RollAPIKey(ctx, app.Meta{RequestID: "req_e"}, id, domain.Live, keys[1].result.ID, 0)
	mint("roll live", domain.Live, res, err)
	res, err = a.RollAPIKey(ctx, app.Meta{RequestID: "req_f"}, id, domain.Live, keys[2].result.ID, time.Minute)
	mint("roll sandbox from a live caller", domain.Sandbox, res, err)

	var tables []string
	rows, err := pool.Query(ctx, `SELECT quote_ident(table_name) FROM information_schema.tables
        WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	if tables, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}

	seen := map[string]bool{}
	for _, k := range keys {
		secret := k.result.Secret
		if !secretFormat[k.env].MatchString(secret) {
			t.Errorf("%s: secret %q does not match %s", k.how, secret, secretFormat[k.env])
			continue
		}
		if seen[secret] {
			t.Errorf("%s: secret issued twice", k.how)
		}
		seen[secret] = true
		sum := sha256.Sum256([]byte(secret))
		if app.HashSecret(secret) != hex.EncodeToString(sum[:]) {
			t.Fatalf("HashSecret is not the hex SHA-256 of the secret")
		}
		var stored, prefix, envCol, evHash string
		if err := pool.QueryRow(ctx, `SELECT secret_hash, prefix, environment FROM api_keys WHERE id = $1`, k.result.ID).Scan(&stored, &prefix, &envCol); err != nil {
			t.Fatalf("%s: key %s: %v", k.how, k.result.ID, err)
		}
		if stored != app.HashSecret(secret) {
			t.Errorf("%s: api_keys.secret_hash = %s, want HashSecret(secret) = %s", k.how, stored, app.HashSecret(secret))
		}
		if prefix != secret[:12] || envCol != k.env.String() {
			t.Errorf("%s: prefix %q environment %q, want %q %q", k.how, prefix, envCol, secret[:12], k.env)
		}
		if err := pool.QueryRow(ctx, `SELECT data->>'secret_hash' FROM events WHERE event_type = 'api_key.created' AND data->>'key_id' = $1`, k.result.ID).Scan(&evHash); err != nil {
			t.Fatalf("%s: event of key %s: %v", k.how, k.result.ID, err)
		}
		if evHash != stored {
			t.Errorf("%s: event secret_hash %s != api_keys.secret_hash %s", k.how, evHash, stored)
		}
		if n := count(t, ctx, pool, `SELECT count(*) FROM events WHERE strpos(data::text, $1) > 0 OR strpos(metadata::text, $1) > 0`, secret[12:]); n != 0 {
			t.Errorf("%s: the secret appears in %d events", k.how, n)
		}
		for _, table := range tables {
			if n := count(t, ctx, pool, `SELECT count(*) FROM `+table+` x WHERE strpos(row_to_json(x)::text, $1) > 0`, secret[12:]); n != 0 {
				t.Errorf("%s: the secret appears in %d rows of %s", k.how, n, table)
			}
		}
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM events WHERE event_type = 'api_key.created'`); n != len(keys) {
		t.Errorf("api_key.created events = %d, want %d", n, len(keys))
	}
}

// TestCredentialByHashFindsOnlyUsableKeys: live and sandbox keys
// authenticate; revoked keys and keys rolled with no grace do not; keys
// rolled with a grace keep working until it ends.
func TestCredentialByHashFindsOnlyUsableKeys(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	id := register(t, ctx, a, "creds")
	other := register(t, ctx, a, "other")
	m := app.Meta{RequestID: "req"}

	lookup := func(secret string) (queries.Credential, bool) {
		t.Helper()
		c, ok, err := queries.CredentialByHash(ctx, pool, app.HashSecret(secret))
		if err != nil {
			t.Fatal(err)
		}
		return c, ok
	}
	expectUsable := func(what, secret, keyID, platformID string, env domain.Environment) queries.Credential {
		t.Helper()
		c, ok := lookup(secret)
		if !ok {
			t.Fatalf("%s: key %s not found", what, keyID)
		}
		if c.KeyID != keyID || c.PlatformID != platformID || c.Environment != env {
			t.Fatalf("%s: credential %+v, want key %s of %s in %s", what, c, keyID, platformID, env)
		}
		return c
	}
	expectRefused := func(what, secret string) {
		t.Helper()
		if c, ok := lookup(secret); ok {
			t.Fatalf("%s: key %s still authenticates", what, c.KeyID)
		}
	}

	sandbox, err := a.ApprovePlatform(ctx, m, id)
	if err != nil {
		t.Fatal(err)
	}
	c := expectUsable("sandbox key", sandbox.Secret, sandbox.ID, id, domain.Sandbox)
	if c.RateLimit != nil {
		t.Fatalf("rate limit %+v before any override", c.RateLimit)
	}
	if err := a.ConfigurePlatform(ctx, m, id, platform.ConfigPatch{RateLimit: domain.Some(platform.RateLimit{PerSecond: 7, Burst: 9})}); err != nil {
		t.Fatal(err)
	}
	c = expectUsable("sandbox key after a rate limit override", sandbox.Secret, sandbox.ID, id, domain.Sandbox)
	if c.RateLimit == nil || c.RateLimit.PerSecond != 7 || c.RateLimit.Burst != 9 {
		t.Fatalf("rate limit = %+v, want 7/s burst 9", c.RateLimit)
	}
	live, err := a.EnableLive(ctx, m, id)
	if err != nil {
		t.Fatal(err)
	}
	expectUsable("live key", live.Secret, live.ID, id, domain.Live)
	otherKey, err := a.ApprovePlatform(ctx, m, other)
	if err != nil {
		t.Fatal(err)
	}
	expectUsable("other platform's key", otherKey.Secret, otherKey.ID, other, domain.Sandbox)
	expectRefused("unknown key", "sk_sandbox_"+"0000000000000000000000000000000000000000")

	// Revoked: refused at once; the other keys are unaffected.
	doomed, err := a.CreateAPIKey(ctx, m, nil, id, domain.Live, domain.Live, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	expectUsable("new live key", doomed.Secret, doomed.ID, id, domain.Live)
	if err := a.RevokeAPIKey(ctx, m, id, domain.Live, doomed.ID); err != nil {
		t.Fatal(err)
	}
	expectRefused("revoked key", doomed.Secret)
	expectUsable("live key after another key's revocation", live.Secret, live.ID, id, domain.Live)
	if _, err := a.RollAPIKey(ctx, m, id, domain.Live, doomed.ID, 0); domain.CodeOf(err) != domain.CodeInvalidState {
		t.Fatalf("roll a revoked key: err = %v, want invalid_state", err)
	}

	// Rolled with grace 0: the old key is expired at once, the new one works.
	rolled, err := a.RollAPIKey(ctx, m, id, domain.Sandbox, sandbox.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !secretFormat[domain.Sandbox].MatchString(rolled.Secret) {
		t.Fatalf("rolled sandbox key secret %q", rolled.Secret)
	}
	expectRefused("key rolled with grace 0", sandbox.Secret)
	expectUsable("replacement key", rolled.Secret, rolled.ID, id, domain.Sandbox)
	if _, err := a.RollAPIKey(ctx, m, id, domain.Sandbox, sandbox.ID, 0); domain.CodeOf(err) != domain.CodeInvalidState {
		t.Fatalf("roll an expired key: err = %v, want invalid_state", err)
	}
	old, err := queries.GetAPIKey(ctx, pool, id, sandbox.ID)
	if err != nil {
		t.Fatal(err)
	}
	if old.ExpiresAt == nil || old.ExpiresAt.After(time.Now()) || old.RevokedAt != nil {
		t.Fatalf("rolled key: expires_at %v revoked_at %v, want expired and not revoked", old.ExpiresAt, old.RevokedAt)
	}

	// Rolled with a grace: both keys work until the grace ends.
	before := time.Now()
	liveNext, err := a.RollAPIKey(ctx, m, id, domain.Live, live.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	expectUsable("live key in its grace period", live.Secret, live.ID, id, domain.Live)
	expectUsable("live replacement", liveNext.Secret, liveNext.ID, id, domain.Live)
	k, err := queries.GetAPIKey(ctx, pool, id, live.ID)
	if err != nil {
		t.Fatal(err)
	}
	if k.ExpiresAt == nil || k.ExpiresAt.Before(before.Add(time.Hour).Add(-time.Millisecond)) || k.ExpiresAt.After(after.Add(time.Hour)) {
		t.Fatalf("live key expires_at = %v, want about an hour from the roll (%v)", k.ExpiresAt, before)
	}
	// The other platform's key is another platform's: GetAPIKey does not show it.
	if _, err := queries.GetAPIKey(ctx, pool, id, otherKey.ID); domain.CodeOf(err) != domain.CodeNotFound {
		t.Fatalf("another platform's key: err = %v, want not_found", err)
	}
	assertProjectionsMatchLog(t, ctx, pool, id)
	assertProjectionsMatchLog(t, ctx, pool, other)
}

// TestProjectionsMatchFoldedLog runs a mixed sequence of commands on two
// platforms and checks the inline read models against the folded log, and
// against what the commands asked for.
func TestProjectionsMatchFoldedLog(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	m := app.Meta{RequestID: "req_mixed", Actor: "operator"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	id := register(t, ctx, a, "mixed")
	bystander := register(t, ctx, a, "bystander")
	assertProjectionsMatchLog(t, ctx, pool, id) // freshly registered: defaults

	sb, err := a.ApprovePlatform(ctx, m, id)
	must(err)
	must(a.ConfigurePlatform(ctx, m, id, platform.ConfigPatch{
		RevenueShareRate: domain.Some("0.30"), InterestRate: domain.Some("0.045"),
		FeeSchedule: domain.Some(map[string]int64{"ach_same_day": 150, "fednow": 0}),
		RateLimit:   domain.Some(platform.RateLimit{PerSecond: 50, Burst: 80}),
	}))
	maxAttempts, autoSettle, delay := 5, false, 30
	must(a.UpdateSettings(ctx, m, id, domain.Sandbox, platform.SettingsPatch{
		WebhookRetryPolicy: domain.Some(platform.RetryPolicyPatch{MaxAttempts: &maxAttempts}),
		Sandbox:            domain.Some(platform.SandboxSettingsPatch{AutoSettle: &autoSettle, ACHStandardDelaySeconds: &delay}),
	}))
	live, err := a.EnableLive(ctx, m, id)
	must(err)
	must(a.UpdateSettings(ctx, m, id, domain.Live, platform.SettingsPatch{PaymentApprovalThreshold: domain.Some(int64(1_000_000))}))
	k1, err := a.CreateAPIKey(ctx, m, nil, id, domain.Live, domain.Sandbox, "sandbox ci")
	must(err)
	k2, err := a.CreateAPIKey(ctx, m, nil, id, domain.Live, domain.Live, "prod")
	must(err)
	must(a.RevokeAPIKey(ctx, m, id, domain.Live, k1.ID))
	r1, err := a.RollAPIKey(ctx, m, id, domain.Sandbox, sb.ID, 0)
	must(err)
	r2, err := a.RollAPIKey(ctx, m, id, domain.Live, k2.ID, 2*time.Hour)
	must(err)
	k2Expiry := func() time.Time {
		t.Helper()
		k, err := queries.GetAPIKey(ctx, pool, id, k2.ID)
		must(err)
		if k.ExpiresAt == nil {
			t.Fatalf("rolled key %s has no expires_at", k2.ID)
		}
		return k.ExpiresAt.Time
	}
	firstExpiry := k2Expiry()
	// Rolling k2 again, in its grace, with a longer grace: a roll never
	// extends a key's life, so k2 keeps its first expiry.
	r3, err := a.RollAPIKey(ctx, m, id, domain.Live, k2.ID, 24*time.Hour)
	must(err)
	if e := k2Expiry(); !e.Equal(firstExpiry) {
		t.Errorf("k2 expires_at moved from %v to %v on a second roll", firstExpiry, e)
	}
	// The operator resets the rate limit and changes one fee more.
	must(a.ConfigurePlatform(ctx, m, id, platform.ConfigPatch{
		RateLimit: domain.Optional[platform.RateLimit]{Set: true}, FeeSchedule: domain.Some(map[string]int64{"rtp": 60}),
	}))
	// Refused commands in between change nothing.
	if err := a.ConfigurePlatform(ctx, m, id, platform.ConfigPatch{InterestRate: domain.Some("1.5")}); domain.CodeOf(err) != domain.CodeInvalidRequest {
		t.Fatalf("interest rate 1.5: err = %v, want invalid_request", err)
	}
	if err := a.UpdateSettings(ctx, m, id, domain.Live, platform.SettingsPatch{
		Sandbox: domain.Some(platform.SandboxSettingsPatch{AutoSettle: &autoSettle}),
	}); domain.CodeOf(err) != domain.CodeInvalidRequest {
		t.Fatalf("sandbox settings in live: err = %v, want invalid_request", err)
	}
	must(a.ConfigurePlatform(ctx, m, bystander, platform.ConfigPatch{RevenueShareRate: domain.Some("0.1")}))

	assertProjectionsMatchLog(t, ctx, pool, id)
	assertProjectionsMatchLog(t, ctx, pool, bystander)

	// And what the commands asked for, independently of the fold.
	p, err := queries.GetPlatform(ctx, pool, id)
	must(err)
	wantFees := map[string]int64{"ach_standard": 25, "ach_same_day": 150, "rtp": 60, "fednow": 0}
	if p.Status != "approved" || !p.LiveEnabled || p.RevenueShareRate != "0.30" || p.InterestRate != "0.045" ||
		!reflect.DeepEqual(p.FeeSchedule, wantFees) || p.RateLimit != nil || p.Environment != "live" {
		t.Errorf("platform = %+v", p)
	}
	if b, err := queries.GetPlatform(ctx, pool, bystander); err != nil || b.RevenueShareRate != "0.10" || b.Status != "pending_approval" {
		t.Errorf("bystander = %+v, %v", b, err)
	}
	sbSettings, err := queries.GetSettings(ctx, pool, id, domain.Sandbox)
	must(err)
	if sbSettings.WebhookRetryPolicy.MaxAttempts != 5 || sbSettings.WebhookRetryPolicy.InitialDelaySeconds != 5 ||
		sbSettings.Sandbox == nil || sbSettings.Sandbox.AutoSettle || sbSettings.Sandbox.ACHStandardDelaySeconds != 30 ||
		sbSettings.Sandbox.ACHSameDayDelaySeconds != 5 {
		t.Errorf("sandbox settings = %s", asJSON(sbSettings.Settings))
	}
	liveSettings, err := queries.GetSettings(ctx, pool, id, domain.Live)
	must(err)
	if liveSettings.PaymentApprovalThreshold == nil || *liveSettings.PaymentApprovalThreshold != 1_000_000 || liveSettings.Sandbox != nil {
		t.Errorf("live settings = %s", asJSON(liveSettings.Settings))
	}

	keyByID := map[string]queries.APIKeyView{}
	for _, env := range []domain.Environment{domain.Sandbox, domain.Live} {
		l, err := queries.ListAPIKeys(ctx, pool, id, env, queries.Page{Limit: 100})
		must(err)
		for _, k := range l.Data {
			keyByID[k.ID] = k
		}
	}
	if len(keyByID) != 7 {
		t.Errorf("%d keys listed, want 7 (sandbox, live, k1, k2 and three roll replacements)", len(keyByID))
	}
	state := func(id string) (revoked, expires bool) {
		k, ok := keyByID[id]
		if !ok {
			t.Fatalf("key %s not listed", id)
		}
		return k.RevokedAt != nil, k.ExpiresAt != nil
	}
	for _, c := range []struct {
		name             string
		id               string
		revoked, expires bool
	}{
		{"approval's sandbox key (rolled)", sb.ID, false, true},
		{"live key", live.ID, false, false},
		{"revoked sandbox key", k1.ID, true, false},
		{"rolled live key", k2.ID, false, true},
		{"sandbox replacement", r1.ID, false, false},
		{"live replacement", r2.ID, false, false},
		{"second live replacement", r3.ID, false, false},
	} {
		if rv, ex := state(c.id); rv != c.revoked || ex != c.expires {
			t.Errorf("%s: revoked %v expires %v, want %v %v", c.name, rv, ex, c.revoked, c.expires)
		}
	}
}

// TestPatchOfEqualRatesRecordsNothing: "a PATCH that changes nothing
// records nothing" (platform.Decide) must hold for rates written the way
// API.md writes them ("0.30"): 0.30 is the rate already set, whatever the
// number of trailing zeros.
func TestPatchOfEqualRatesRecordsNothing(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	id := register(t, ctx, a, "equalrates")
	patch := platform.ConfigPatch{RevenueShareRate: domain.Some("0.30"), InterestRate: domain.Some("0.045")}
	if err := a.ConfigurePlatform(ctx, operatorMeta("req_first"), id, patch); err != nil {
		t.Fatal(err)
	}
	assertGapless(t, ctx, pool, id, 2)
	for _, p := range []platform.ConfigPatch{
		patch, // the very same request again
		{RevenueShareRate: domain.Some("0.3")},
		{InterestRate: domain.Some("0.0450")},
	} {
		if err := a.ConfigurePlatform(ctx, operatorMeta("req_same"), id, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := streamVersions(t, ctx, pool, id); len(got) != 2 {
		t.Errorf("PATCHes of the rates already set recorded %d more events (versions %v), want none", len(got)-2, got)
	}
	assertProjectionsMatchLog(t, ctx, pool, id)
}
