package projections

import (
	"strings"
	"time"

	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// Payments projects payment streams into the payments table.
type Payments struct{}

func (Payments) Name() string     { return "payments" }
func (Payments) Tables() []string { return []string{"payments"} }

// paymentRow is a payment's row as the batch leaves it: a payment created
// in the batch is inserted once, in its final state; one created before
// is updated with the fields the batch changed (nil: unchanged).
type paymentRow struct {
	created                                *payment.Created
	status                                 string
	failure                                *string // JSON
	updatedAt                              time.Time
	submitted, completed, failed, canceled *time.Time
	trace, achFile                         *string        // a live ACH payment's file
	settlesAt                              *time.Time     // its entry's settlement: the new expected settlement
	change                                 *string        // JSON: the latest notification of change
	approval                               map[string]any // the approval's fields the batch set
	cancelReason                           *string
	released                               *payment.Released // a scheduled payment's release
}

// setApproval records fields of a payment's approval (queries.ApprovalView's
// names and renderings); the row's approval is merged with them.
func (row *paymentRow) setApproval(fields map[string]any) {
	if row.approval == nil {
		row.approval = map[string]any{}
	}
	for k, v := range fields {
		row.approval[k] = v
	}
}

// Project folds the batch's payment events per payment, then writes new
// payments with one INSERT and changed ones with one UPDATE.
func (Payments) Project(b *Batch) error {
	rows := map[string]*paymentRow{}
	var order []string
	for i := range b.Events {
		r := &b.Events[i]
		if !strings.HasPrefix(r.StreamID, payment.StreamID("")) {
			continue
		}
		ev, err := r.Decode()
		if err != nil {
			return err
		}
		id := r.StreamID[len(payment.StreamID("")):]
		row := rows[id]
		if row == nil {
			row = &paymentRow{}
			rows[id] = row
			order = append(order, id)
		}
		switch e := ev.(type) {
		case payment.Created:
			row.created, row.status, row.updatedAt = &e, "pending", e.At
			if e.ScheduledFor != "" {
				row.status = payment.StatusScheduled
			}
		case payment.Released:
			row.status, row.released, row.updatedAt, row.settlesAt = payment.StatusPending, &e, e.At, &e.ExpectedSettlementAt
		case payment.Submitted:
			row.status, row.submitted, row.updatedAt = "submitted", &e.At, e.At
			if e.TraceNumber != "" {
				row.trace, row.achFile = &e.TraceNumber, &e.ACHFileID
			}
			if e.SettlesAt != nil {
				row.settlesAt = e.SettlesAt
			}
		case payment.Completed:
			row.status, row.completed, row.updatedAt = "completed", &e.At, e.At
		case payment.Failed:
			f := jsonString(e.Failure)
			row.status, row.failure, row.failed, row.updatedAt = "failed", &f, &e.At, e.At
		case payment.Canceled:
			row.status, row.canceled, row.updatedAt = "canceled", &e.At, e.At
			if e.Reason != "" {
				row.cancelReason = &e.Reason
			}
		case payment.ApprovalRequired:
			row.status, row.updatedAt = payment.StatusRequiresApproval, e.At
			row.setApproval(map[string]any{"created_by": e.CreatedBy, "expires_at": queries.NewTime(e.ExpiresAt),
				"approved_at": nil, "approved_by": nil, "denied_at": nil, "denied_by": nil, "denial_reason": nil})
		case payment.Approved:
			row.status, row.updatedAt, row.settlesAt = payment.StatusPending, e.At, &e.ExpectedSettlementAt
			row.setApproval(map[string]any{"approved_at": queries.NewTime(e.At), "approved_by": e.ApprovedBy})
		case payment.Denied:
			row.status, row.updatedAt = payment.StatusDenied, e.At
			var reason any
			if e.Reason != "" {
				reason = e.Reason
			}
			row.setApproval(map[string]any{"denied_at": queries.NewTime(e.At), "denied_by": e.DeniedBy, "denial_reason": reason})
		case payment.NotificationOfChange:
			c := jsonString(queries.NewChangeView(&e))
			row.change, row.updatedAt = &c, e.At
		}
	}
	var ins, upd paymentColumnsOf
	for _, id := range order {
		row := rows[id]
		if row.created != nil {
			ins.add(id, row)
		} else if row.status != "" || row.change != nil || row.approval != nil { // a notice of change moves no status
			upd.add(id, row)
		}
	}
	if len(ins.id) > 0 {
		b.Queue(`INSERT INTO payments (id, platform_id, environment, virtual_account_id, amount, fee, rail, destination,
                idempotency_key, description, metadata, journal_entry_id, expected_settlement_at, created_at,
                status, failure, updated_at, submitted_at, completed_at, failed_at, canceled_at, trace_number, ach_file_id,
                notification_of_change, approval, cancel_reason, scheduled_for, release_at, released_at, counterparty_id)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::text[],
                $8::jsonb[], $9::text[], $10::text[], $11::jsonb[], $12::text[], $13::timestamptz[], $14::timestamptz[],
                $15::text[], $16::jsonb[], $17::timestamptz[], $18::timestamptz[], $19::timestamptz[], $20::timestamptz[],
                $21::timestamptz[], $22::text[], $23::text[], $24::jsonb[], $25::jsonb[], $26::text[], $27::date[],
                $28::timestamptz[], $29::timestamptz[], $30::text[])`,
			ins.id, ins.platform, ins.env, ins.va, ins.amount, ins.fee, ins.rail, ins.destination, ins.key, ins.desc,
			ins.metadata, ins.journal, ins.expected, ins.createdAt,
			ins.status, ins.failure, ins.updatedAt, ins.submitted, ins.completed, ins.failed, ins.canceled, ins.trace, ins.achFile,
			ins.change, ins.approval, ins.cancelReason, ins.scheduledFor, ins.releaseAt, ins.releasedAt, ins.counterparty)
	}
	if len(upd.id) > 0 {
		b.Queue(`UPDATE payments p SET status = coalesce(nullif(u.status, ''), p.status), failure = coalesce(u.failure, p.failure), updated_at = u.updated_at,
                submitted_at = coalesce(u.submitted_at, p.submitted_at), completed_at = coalesce(u.completed_at, p.completed_at),
                failed_at = coalesce(u.failed_at, p.failed_at), canceled_at = coalesce(u.canceled_at, p.canceled_at),
                trace_number = coalesce(u.trace_number, p.trace_number), ach_file_id = coalesce(u.ach_file_id, p.ach_file_id),
                expected_settlement_at = coalesce(u.settles_at, p.expected_settlement_at),
                notification_of_change = coalesce(u.change, p.notification_of_change),
                approval = CASE WHEN u.approval IS NULL THEN p.approval ELSE coalesce(p.approval, '{}'::jsonb) || u.approval END,
                cancel_reason = coalesce(u.cancel_reason, p.cancel_reason),
                released_at = coalesce(u.released_at, p.released_at), fee = coalesce(u.fee, p.fee),
                journal_entry_id = coalesce(u.journal_entry_id, p.journal_entry_id)
            FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[],
                $7::timestamptz[], $8::timestamptz[], $9::text[], $10::text[], $11::timestamptz[], $12::jsonb[], $13::jsonb[], $14::text[],
                $15::timestamptz[], $16::bigint[], $17::text[])
                u(id, status, failure, updated_at, submitted_at, completed_at, failed_at, canceled_at, trace_number, ach_file_id,
                settles_at, change, approval, cancel_reason, released_at, fee, journal_entry_id)
            WHERE p.id = u.id`,
			upd.id, upd.status, upd.failure, upd.updatedAt, upd.submitted, upd.completed, upd.failed, upd.canceled, upd.trace, upd.achFile,
			upd.settlesAt, upd.change, upd.approval, upd.cancelReason, upd.releasedAt, upd.releasedFee, upd.releasedJournal)
	}
	return nil
}

// paymentColumnsOf holds payment rows column by column, for unnest.
type paymentColumnsOf struct {
	id, platform, env, va, rail, destination, key, desc, metadata, journal, status []string
	amount, fee                                                                    []int64
	expected, createdAt, updatedAt                                                 []time.Time
	failure                                                                        []*string
	submitted, completed, failed, canceled                                         []*time.Time
	trace, achFile                                                                 []*string
	settlesAt                                                                      []*time.Time
	change                                                                         []*string
	approval                                                                       []*string
	cancelReason                                                                   []*string
	scheduledFor                                                                   []*string // inserts only
	counterparty                                                                   []*string // inserts only
	releaseAt, releasedAt                                                          []*time.Time
	releasedFee                                                                    []*int64 // updates only
	releasedJournal                                                                []*string
}

func (c *paymentColumnsOf) add(id string, row *paymentRow) {
	c.id = append(c.id, id)
	c.status = append(c.status, row.status)
	c.failure = append(c.failure, row.failure)
	c.updatedAt = append(c.updatedAt, row.updatedAt)
	c.submitted = append(c.submitted, row.submitted)
	c.completed = append(c.completed, row.completed)
	c.failed = append(c.failed, row.failed)
	c.canceled = append(c.canceled, row.canceled)
	c.trace = append(c.trace, row.trace)
	c.achFile = append(c.achFile, row.achFile)
	c.settlesAt = append(c.settlesAt, row.settlesAt)
	c.change = append(c.change, row.change)
	var approval *string
	if row.approval != nil {
		j := jsonString(row.approval)
		approval = &j
	}
	c.approval = append(c.approval, approval)
	c.cancelReason = append(c.cancelReason, row.cancelReason)
	var releasedAt *time.Time
	var fee *int64
	var journal *string
	if r := row.released; r != nil {
		releasedAt, fee, journal = &r.At, &r.Fee, &r.JournalEntryID
	}
	c.releasedAt = append(c.releasedAt, releasedAt)
	if e := row.created; e != nil {
		var scheduledFor *string
		if e.ScheduledFor != "" {
			scheduledFor = &e.ScheduledFor
		}
		c.scheduledFor = append(c.scheduledFor, scheduledFor)
		var cp *string
		if e.CounterpartyID != "" {
			cp = &e.CounterpartyID
		}
		c.counterparty = append(c.counterparty, cp)
		c.releaseAt = append(c.releaseAt, e.ReleaseAt)
		if r := row.released; r != nil { // scheduled and released in the same batch (a rebuild)
			e2 := *e
			e2.Fee, e2.JournalEntryID = r.Fee, r.JournalEntryID
			e = &e2
		}
		c.platform = append(c.platform, e.PlatformID)
		c.env = append(c.env, e.Environment.String())
		c.va = append(c.va, e.VirtualAccountID)
		c.amount = append(c.amount, e.Amount)
		c.fee = append(c.fee, e.Fee)
		c.rail = append(c.rail, e.Rail)
		c.destination = append(c.destination, jsonString(e.Destination))
		c.key = append(c.key, e.IdempotencyKey)
		c.desc = append(c.desc, e.Description)
		c.metadata = append(c.metadata, jsonString(queries.Metadata(e.Metadata)))
		c.journal = append(c.journal, e.JournalEntryID)
		expected := e.ExpectedSettlementAt
		if row.settlesAt != nil { // cut into a file in the same batch
			expected = *row.settlesAt
		}
		c.expected = append(c.expected, expected)
		c.createdAt = append(c.createdAt, e.At)
	} else {
		c.releasedFee = append(c.releasedFee, fee)
		c.releasedJournal = append(c.releasedJournal, journal)
	}
}

// paymentAt folds a payment's stream up to and including r.
func paymentAt(streams streamSource, r *eventstore.RecordedEvent) (queries.PaymentView, error) {
	s, err := eventstore.Fold(upTo(streams.stream(r.StreamID), r), payment.State{}, payment.Evolve)
	return queries.NewPaymentView(s), err
}
