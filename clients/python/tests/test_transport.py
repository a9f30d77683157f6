"""Retries, idempotency keys, error mapping and pagination against local stub servers.

The real server cannot be made to answer 5xx, so InternalServerError and the
retry of a POST after a 503 are shown here; every other error class, and a
retry after a real 429, are in test_integration.
"""

from __future__ import annotations

import json
import socket
import time
import unittest
from typing import Dict

import support
from support import LocalServer, json_answer, scripted

import treasury
from treasury import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)

PAYMENT = {"id": "pay_1", "object": "payment", "status": "pending"}
DEST = {"account_number": "123456789", "routing_number": "021000021", "name": "Acme"}


def error_body(code: str, **extra: str) -> Dict[str, str]:
    return dict({"code": code, "message": f"{code} happened", "request_id": "req_stub"}, **extra)


class StubTest(unittest.TestCase):
    def client(self, server: LocalServer, **kw) -> treasury.Treasury:  # type: ignore[no-untyped-def]
        return treasury.Treasury(api_key="sk_sandbox_stub", base_url=server.url + "/v1", **kw)

    def test_a_post_retried_after_503_keeps_its_idempotency_key(self) -> None:
        with LocalServer(scripted(json_answer(503, error_body("unavailable"), {"Retry-After": "0"}),
                                  json_answer(201, PAYMENT))) as server:
            payment = self.client(server).payments.create(virtual_account_id="va_1", amount=100, rail="rtp",
                                                          destination=DEST)
            self.assertEqual(payment["id"], "pay_1")
            self.assertEqual(len(server.all), 2)
            keys = [r.header("Idempotency-Key") for r in server.all]
            self.assertTrue(keys[0])
            self.assertEqual(keys[0], keys[1])
            bodies = [json.loads(r.body) for r in server.all]
            self.assertEqual(bodies[0], bodies[1])
            self.assertEqual(bodies[0]["idempotency_key"], keys[0], "the payment's body key defaults to the header's")

    def test_a_book_transfer_always_carries_an_idempotency_key_kept_across_retries(self) -> None:
        # The server refuses a book transfer without a key: the client makes one,
        # sends it in the header and the body, and keeps it on each retry.
        bt = {"id": "bt_1", "object": "book_transfer", "status": "completed"}
        with LocalServer(scripted(json_answer(503, error_body("unavailable"), {"Retry-After": "0"}),
                                  json_answer(409, error_body("idempotency_in_progress"), {"Retry-After": "0"}),
                                  json_answer(201, bt))) as server:
            got = self.client(server).book_transfers.create(from_virtual_account_id="va_1", to_virtual_account_id="va_2",
                                                            amount=100)
            self.assertEqual(got["id"], "bt_1")
            self.assertEqual([(r.method, r.path) for r in server.all], [("POST", "/v1/book-transfers")] * 3)
            keys = {r.header("Idempotency-Key") for r in server.all}
            bodies = [json.loads(r.body) for r in server.all]
            self.assertEqual(len(keys), 1, "one key across the retries")
            [key] = keys
            self.assertTrue(key)
            self.assertEqual(bodies, [{"from_virtual_account_id": "va_1", "to_virtual_account_id": "va_2",
                                       "amount": 100, "idempotency_key": key}] * 3)
        with LocalServer(scripted(json_answer(201, bt))) as server:
            c = self.client(server)
            c.book_transfers.create(from_virtual_account_id="va_1", to_virtual_account_id="va_2", amount=100)
            c.book_transfers.create(from_virtual_account_id="va_1", to_virtual_account_id="va_2", amount=100)
            c.book_transfers.create(from_virtual_account_id="va_1", to_virtual_account_id="va_2", amount=100,
                                    idempotency_key="sweep-7", description="sweep", metadata={"k": "v"})
            keys = [r.header("Idempotency-Key") for r in server.all]
            self.assertNotEqual(keys[0], keys[1], "each call its own key")
            self.assertEqual(keys[2], "sweep-7")
            self.assertEqual(json.loads(server.all[2].body),
                             {"from_virtual_account_id": "va_1", "to_virtual_account_id": "va_2", "amount": 100,
                              "idempotency_key": "sweep-7", "description": "sweep", "metadata": {"k": "v"}})

    def test_book_transfers_are_listed_with_their_filters_on_every_page(self) -> None:
        pages = {
            None: {"object": "list", "data": [{"id": "bt_2"}], "has_more": True, "next_cursor": "c1"},
            "c1": {"object": "list", "data": [{"id": "bt_1"}], "has_more": False, "next_cursor": None},
        }

        def respond(r: support.Received):  # type: ignore[no-untyped-def]
            from urllib.parse import parse_qs, urlsplit
            url = urlsplit(r.path)
            self.assertEqual(url.path, "/v1/book-transfers")
            q = parse_qs(url.query)
            self.assertEqual({k: v for k, v in q.items() if k != "cursor"},
                             {"virtual_account_id": ["va_1"], "created_after": ["2026-01-01"],
                              "metadata[invoice]": ["42"], "limit": ["1"]})
            return json_answer(200, pages[q.get("cursor", [None])[0]])

        with LocalServer(respond) as server:
            c = self.client(server)
            page = c.book_transfers.list(virtual_account_id="va_1", created_after="2026-01-01",
                                         metadata={"invoice": "42"}, limit=1)
            self.assertEqual([t["id"] for t in page], ["bt_2", "bt_1"])
            self.assertEqual(len(server.all), 2)
        with LocalServer(scripted(json_answer(200, {"id": "bt_1"}))) as server:
            self.client(server).book_transfers.retrieve("bt_1/../x")
            self.assertEqual(server.all[0].path, "/v1/book-transfers/bt_1%2F..%2Fx")
            self.assertIsNone(server.all[0].header("Idempotency-Key"))

    def test_approve_and_deny_post_to_the_payment(self) -> None:
        # approve takes no body; deny sends its reason only when given; both are
        # POSTs with their own Idempotency-Key, the id one quoted path segment.
        waiting = {"id": "pay_1", "object": "payment", "status": "denied",
                   "approval": {"created_by": "key_1", "denied_by": "key_1", "denial_reason": "dup"}}
        with LocalServer(scripted(json_answer(200, waiting))) as server:
            c = self.client(server)
            got = c.payments.deny("pay_1", reason="dup")
            self.assertEqual((got["status"], got["approval"]["denial_reason"]), ("denied", "dup"))
            c.payments.deny("pay_1")
            c.payments.approve("pay_1")
            c.payments.approve("pay/../1", idempotency_key="approve-1")
            self.assertEqual([(r.method, r.path) for r in server.all],
                             [("POST", "/v1/payments/pay_1/deny"), ("POST", "/v1/payments/pay_1/deny"),
                              ("POST", "/v1/payments/pay_1/approve"), ("POST", "/v1/payments/pay%2F..%2F1/approve")])
            self.assertEqual([json.loads(r.body) for r in server.all], [{"reason": "dup"}, {}, {}, {}])
            keys = [r.header("Idempotency-Key") for r in server.all]
            self.assertTrue(all(keys[:3]) and len(set(keys[:3])) == 3, keys)
            self.assertEqual(keys[3], "approve-1")
        # a 409 invalid_state (the payment is not waiting) is not retried
        with LocalServer(scripted(json_answer(409, error_body("invalid_state")))) as server:
            with self.assertRaises(ConflictError) as cm:
                self.client(server).payments.approve("pay_1")
            self.assertEqual(cm.exception.code, "invalid_state")
            self.assertEqual(len(server.all), 1)

    def test_a_scheduled_payment_and_its_release(self) -> None:
        # scheduled_for goes in the body only when given; release is a POST without
        # fields, a key each, the id one quoted path segment.
        scheduled = dict(PAYMENT, status="scheduled", scheduled_for="2026-12-01", journal_entry_id=None)
        with LocalServer(scripted(json_answer(201, scheduled))) as server:
            c = self.client(server)
            got = c.payments.create(virtual_account_id="va_1", amount=100, rail="ach_standard", destination=DEST,
                                    scheduled_for="2026-12-01")
            self.assertEqual((got["status"], got["scheduled_for"], got["journal_entry_id"]),
                             ("scheduled", "2026-12-01", None))
            c.payments.create(virtual_account_id="va_1", amount=100, rail="rtp", destination=DEST)
            bodies = [json.loads(r.body) for r in server.all]
            self.assertEqual(bodies[0]["scheduled_for"], "2026-12-01")
            self.assertNotIn("scheduled_for", bodies[1])
        refused = dict(PAYMENT, status="failed", scheduled_for="2026-12-01", journal_entry_id=None,
                       failure={"code": "insufficient_funds", "network_code": None, "reason": "Insufficient funds",
                                "retry_recommendation": {"action": "retry_later"}})
        with LocalServer(scripted(json_answer(200, refused))) as server:
            c = self.client(server)
            got = c.simulations.payments.release("pay_1")
            failure = got["failure"]
            assert failure is not None
            self.assertEqual((got["status"], failure["code"], failure["network_code"]),
                             ("failed", "insufficient_funds", None))
            c.simulations.payments.release("pay/../1", idempotency_key="release-1")
            self.assertEqual([(r.method, r.path) for r in server.all],
                             [("POST", "/v1/simulations/payments/pay_1/release"),
                              ("POST", "/v1/simulations/payments/pay%2F..%2F1/release")])
            self.assertEqual([json.loads(r.body) for r in server.all], [{}, {}])
            keys = [r.header("Idempotency-Key") for r in server.all]
            self.assertTrue(keys[0])
            self.assertEqual(keys[1], "release-1")
        # a 409 invalid_state (the payment is not scheduled) is not retried
        with LocalServer(scripted(json_answer(409, error_body("invalid_state")))) as server:
            with self.assertRaises(ConflictError) as cm:
                self.client(server).simulations.payments.release("pay_1")
            self.assertEqual(cm.exception.code, "invalid_state")
            self.assertEqual(len(server.all), 1)

    def test_a_webhook_replay(self) -> None:
        # types goes in the body only when given; a key each (the caller's, else a
        # random one), the same across a retry; the id one quoted path segment.
        replay = {"id": "rpl_1", "object": "webhook_replay", "webhook_id": "wh_1",
                  "created_after": "2026-01-01T00:00:00.000Z", "created_before": "2026-01-02T00:00:00.000Z",
                  "types": None, "replayed": 3,
                  "created_at": "2026-01-02T00:00:01.000Z"}
        with LocalServer(scripted(json_answer(503, error_body("unavailable"), {"Retry-After": "0"}),
                                  json_answer(201, replay))) as server:
            c = self.client(server)
            got = c.webhooks.replay("wh_1", created_after="2026-01-01", created_before="2026-01-02")
            self.assertEqual((got["id"], got["replayed"], got["types"]), ("rpl_1", 3, None))
            c.webhooks.replay("wh/../1", created_after="2026-01-01T00:00:00Z", created_before="2026-01-02",
                              types=["payment.completed", "payment.failed"], idempotency_key="replay-1")
            self.assertEqual([(r.method, r.path) for r in server.all],
                             [("POST", "/v1/webhooks/wh_1/replay")] * 2 + [("POST", "/v1/webhooks/wh%2F..%2F1/replay")])
            bodies = [json.loads(r.body) for r in server.all]
            self.assertEqual(bodies, [{"created_after": "2026-01-01", "created_before": "2026-01-02"}] * 2
                             + [{"created_after": "2026-01-01T00:00:00Z", "created_before": "2026-01-02",
                                 "types": ["payment.completed", "payment.failed"]}])
            keys = [r.header("Idempotency-Key") for r in server.all]
            self.assertTrue(keys[0])
            self.assertEqual(keys[0], keys[1], "the same key on the retry")
            self.assertEqual(keys[2], "replay-1")
        # 400 replay_too_large is a BadRequestError, not retried
        with LocalServer(scripted(json_answer(400, error_body("replay_too_large", param="created_before")))) as server:
            with self.assertRaises(BadRequestError) as cm:
                self.client(server).webhooks.replay("wh_1", created_after="2020-01-01", created_before="2030-01-01")
            self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.param),
                             (400, "replay_too_large", "created_before"))
            self.assertEqual(len(server.all), 1)
        # 409 invalid_state (a disabled endpoint) is not retried
        with LocalServer(scripted(json_answer(409, error_body("invalid_state")))) as server:
            with self.assertRaises(ConflictError) as cm409:
                self.client(server).webhooks.replay("wh_1", created_after="2026-01-01", created_before="2026-01-02")
            self.assertEqual(cm409.exception.code, "invalid_state")
            self.assertEqual(len(server.all), 1)

    def test_counterparties(self) -> None:
        # create: a key made by the client (the header; the body has no key field), the
        # same across a retry; metadata only when given; the full account number sent.
        cp = {"id": "cp_1", "object": "counterparty", "name": "Initech LLC", "account_number_last4": "4321",
              "routing_number": "021000021", "account_type": "checking",
              "verification": {"status": "unverified", "method": None}, "metadata": {},
              "environment": "sandbox", "created_at": "2026-01-15T09:30:00.000Z"}
        with LocalServer(scripted(json_answer(503, error_body("unavailable"), {"Retry-After": "0"}),
                                  json_answer(201, cp))) as server:
            c = self.client(server)
            got = c.counterparties.create(name="Initech LLC", account_number="987654321", routing_number="021000021",
                                          account_type="checking")
            self.assertEqual((got["id"], got["verification"]["status"], got["verification"]["method"]),
                             ("cp_1", "unverified", None))
            c.counterparties.create(name="Initech LLC", account_number="987654321", routing_number="021000021",
                                    account_type="savings", metadata={"vendor": "42"}, idempotency_key="cp-1")
            self.assertEqual([(r.method, r.path) for r in server.all], [("POST", "/v1/counterparties")] * 3)
            bodies = [json.loads(r.body) for r in server.all]
            plain = {"name": "Initech LLC", "account_number": "987654321", "routing_number": "021000021",
                     "account_type": "checking"}
            self.assertEqual(bodies, [plain, plain, dict(plain, account_type="savings", metadata={"vendor": "42"})])
            keys = [r.header("Idempotency-Key") for r in server.all]
            self.assertTrue(keys[0])
            self.assertEqual(keys[0], keys[1], "the same key on the retry")
            self.assertEqual(keys[2], "cp-1")
        # retrieve, delete, verify: the id one quoted path segment; verify's body and a key each
        pending = dict(cp, verification={"status": "pending", "method": "prenote"})
        with LocalServer(scripted(json_answer(200, cp), json_answer(200, {"id": "cp_1", "object": "counterparty",
                                                                            "deleted": True}),
                                  json_answer(200, pending), json_answer(200, pending))) as server:
            c = self.client(server)
            c.counterparties.retrieve("cp/../1")
            deleted = c.counterparties.delete("cp_1")
            self.assertTrue(deleted["deleted"])
            verified = c.counterparties.verify("cp_1", method="prenote")
            self.assertEqual(verified["verification"], {"status": "pending", "method": "prenote"})
            c.counterparties.verify("cp_1", method="prenote", idempotency_key="verify-1")
            self.assertEqual([(r.method, r.path) for r in server.all],
                             [("GET", "/v1/counterparties/cp%2F..%2F1"), ("DELETE", "/v1/counterparties/cp_1"),
                              ("POST", "/v1/counterparties/cp_1/verify"), ("POST", "/v1/counterparties/cp_1/verify")])
            self.assertEqual([json.loads(r.body) for r in server.all[2:]], [{"method": "prenote"}] * 2)
            self.assertIsNone(server.all[0].header("Idempotency-Key"))
            self.assertIsNone(server.all[1].header("Idempotency-Key"))
            self.assertTrue(server.all[2].header("Idempotency-Key"))
            self.assertEqual(server.all[3].header("Idempotency-Key"), "verify-1")
        # 409 invalid_state (pending or verified) is not retried
        with LocalServer(scripted(json_answer(409, error_body("invalid_state")))) as server:
            with self.assertRaises(ConflictError) as cm:
                self.client(server).counterparties.verify("cp_1", method="prenote")
            self.assertEqual(cm.exception.code, "invalid_state")
            self.assertEqual(len(server.all), 1)

    def test_a_501_is_never_retried(self) -> None:
        # not_implemented (a route this build does not serve; faked here on verify) is
        # NotImplementedAPIError, an InternalServerError, and is not retried whatever
        # x-should-retry says.
        for headers in ({}, {"x-should-retry": "false"}, {"x-should-retry": "true", "Retry-After": "0"}):
            with self.subTest(headers=headers):
                body = error_body("not_implemented", resource_id="cp_1")
                with LocalServer(scripted(json_answer(501, body, headers), json_answer(200, {"id": "cp_1"}))) as server:
                    with self.assertRaises(treasury.NotImplementedAPIError) as cm:
                        self.client(server).counterparties.verify("cp_1", method="prenote")
                    e = cm.exception
                    self.assertIsInstance(e, InternalServerError)
                    self.assertEqual((e.status, e.code, e.resource_id), (501, "not_implemented", "cp_1"))
                    self.assertEqual(len(server.all), 1)

    def test_counterparties_are_listed_with_their_filters_on_every_page(self) -> None:
        pages = {
            None: {"object": "list", "data": [{"id": "cp_2"}], "has_more": True, "next_cursor": "c1"},
            "c1": {"object": "list", "data": [{"id": "cp_1"}], "has_more": False, "next_cursor": None},
        }

        def respond(r: support.Received):  # type: ignore[no-untyped-def]
            from urllib.parse import parse_qs, urlsplit
            url = urlsplit(r.path)
            self.assertEqual(url.path, "/v1/counterparties")
            q = parse_qs(url.query)
            self.assertEqual({k: v for k, v in q.items() if k != "cursor"},
                             {"verification_status": ["verified"], "created_after": ["2026-01-01"],
                              "created_before": ["2026-02-01"], "metadata[order id]": ["A&B"], "limit": ["1"]})
            return json_answer(200, pages[q.get("cursor", [None])[0]])

        with LocalServer(respond) as server:
            page = self.client(server).counterparties.list(verification_status="verified", created_after="2026-01-01",
                                                           created_before="2026-02-01", metadata={"order id": "A&B"},
                                                           limit=1)
            self.assertEqual([cp["id"] for cp in page], ["cp_2", "cp_1"])
            self.assertEqual(len(server.all), 2)

    def test_a_payment_to_a_counterparty_and_the_setting(self) -> None:
        # counterparty_id instead of destination: only the one given goes in the body
        paid = dict(PAYMENT, counterparty_id="cp_1", destination=dict(DEST, account_number="987654321"))
        with LocalServer(scripted(json_answer(201, paid))) as server:
            c = self.client(server)
            got = c.payments.create(virtual_account_id="va_1", amount=100, rail="rtp", counterparty_id="cp_1")
            self.assertEqual(got.get("counterparty_id"), "cp_1")
            c.payments.create(virtual_account_id="va_1", amount=100, rail="rtp", destination=DEST)
            bodies = [json.loads(r.body) for r in server.all]
            self.assertEqual(bodies[0]["counterparty_id"], "cp_1")
            self.assertNotIn("destination", bodies[0])
            self.assertEqual(bodies[1]["destination"], DEST)
            self.assertNotIn("counterparty_id", bodies[1])
        # 422 counterparty_not_verified is an UnprocessableEntityError, not retried
        with LocalServer(scripted(json_answer(422, error_body("counterparty_not_verified", param="counterparty_id",
                                                              resource_id="cp_1")))) as server:
            with self.assertRaises(UnprocessableEntityError) as cm:
                self.client(server).payments.create(virtual_account_id="va_1", amount=100, rail="rtp",
                                                    counterparty_id="cp_1")
            self.assertEqual((cm.exception.code, cm.exception.param, cm.exception.resource_id),
                             ("counterparty_not_verified", "counterparty_id", "cp_1"))
            self.assertEqual(len(server.all), 1)
        # the setting goes in the PATCH only when given
        with LocalServer(scripted(json_answer(200, {"require_verified_counterparty": True}))) as server:
            c = self.client(server)
            c.platform.settings.update(require_verified_counterparty=True)
            c.platform.settings.update(daily_payment_limit=None)
            self.assertEqual([json.loads(r.body) for r in server.all],
                             [{"require_verified_counterparty": True}, {"daily_payment_limit": None}])

    def test_journal_entries_are_listed_with_their_filters_on_every_page(self) -> None:
        pages = {
            None: {"object": "list", "data": [{"id": "je_3"}, {"id": "je_2"}], "has_more": True, "next_cursor": "c1"},
            "c1": {"object": "list", "data": [{"id": "je_1"}], "has_more": False, "next_cursor": None},
        }
        wanted = {"type": ["adjustment"], "status": ["posted"], "virtual_account_id": ["va_1"],
                  "source_type": ["journal_entry"], "source_id": ["je_9"], "created_after": ["2026-01-01"],
                  "created_before": ["2026-02-01T00:00:00Z"], "metadata[invoice]": ["42"],
                  "metadata[order id]": ["A&B"], "limit": ["2"]}

        def respond(r: support.Received):  # type: ignore[no-untyped-def]
            from urllib.parse import parse_qs, urlsplit
            url = urlsplit(r.path)
            self.assertEqual(url.path, "/v1/ledger/journal-entries")
            q = parse_qs(url.query)
            self.assertEqual({k: v for k, v in q.items() if k != "cursor"}, wanted)
            return json_answer(200, pages[q.get("cursor", [None])[0]])

        with LocalServer(respond) as server:
            c = self.client(server)
            page = c.ledger.journal_entries.list(type="adjustment", status="posted", virtual_account_id="va_1",
                                                 source_type="journal_entry", source_id="je_9",
                                                 created_after="2026-01-01", created_before="2026-02-01T00:00:00Z",
                                                 metadata={"invoice": "42", "order id": "A&B"}, limit=2)
            self.assertEqual([e["id"] for e in page.data], ["je_3", "je_2"])
            self.assertEqual([e["id"] for e in page], ["je_3", "je_2", "je_1"])
            self.assertEqual([r.method for r in server.all], ["GET", "GET"])
            self.assertIsNone(server.all[0].header("Idempotency-Key"))
        # no filter: no query at all
        with LocalServer(scripted(json_answer(200, pages["c1"]))) as server:
            self.assertEqual([e["id"] for e in self.client(server).ledger.journal_entries.list()], ["je_1"])
            self.assertEqual(server.all[0].path, "/v1/ledger/journal-entries")

    def test_the_callers_idempotency_key_is_sent(self) -> None:
        with LocalServer(scripted(json_answer(201, PAYMENT))) as server:
            self.client(server).payments.create(virtual_account_id="va_1", amount=100, rail="rtp", destination=DEST,
                                                idempotency_key="order-42")
            self.assertEqual(server.all[0].header("Idempotency-Key"), "order-42")
            self.assertEqual(json.loads(server.all[0].body)["idempotency_key"], "order-42")
            self.client(server).virtual_accounts.freeze("va_1", idempotency_key="freeze-1")
            self.assertEqual(server.all[1].header("Idempotency-Key"), "freeze-1")

    def test_every_post_gets_a_fresh_key_and_other_methods_none(self) -> None:
        with LocalServer(scripted(json_answer(200, {"id": "va_1"}))) as server:
            c = self.client(server)
            c.virtual_accounts.freeze("va_1")
            c.virtual_accounts.unfreeze("va_1")
            c.virtual_accounts.retrieve("va_1")
            c.webhooks.update("wh_1", description="x")
            k1, k2 = server.all[0].header("Idempotency-Key"), server.all[1].header("Idempotency-Key")
            self.assertTrue(k1 and k2 and k1 != k2)
            self.assertIsNone(server.all[2].header("Idempotency-Key"))
            self.assertIsNone(server.all[3].header("Idempotency-Key"))
            self.assertEqual(server.all[0].header("Authorization"), "Bearer sk_sandbox_stub")
            self.assertEqual(server.all[0].header("Content-Type"), "application/json")
            self.assertEqual(server.all[3].method, "PATCH")
            self.assertEqual(json.loads(server.all[3].body), {"description": "x"})

    def test_5xx_raises_internal_server_error_after_the_retries(self) -> None:
        with LocalServer(scripted(json_answer(500, error_body("internal_error"), {"X-Request-Id": "req_x", "Retry-After": "0"}))) as server:
            with self.assertRaises(InternalServerError) as cm:
                self.client(server).platform.retrieve()
            err = cm.exception
            self.assertIsInstance(err, APIError)
            self.assertEqual((err.status, err.code, err.request_id), (500, "internal_error", "req_stub"))
            self.assertEqual(len(server.all), 3, "1 attempt + 2 retries by default")

    def test_max_retries_is_configurable(self) -> None:
        with LocalServer(scripted(json_answer(502, error_body("internal_error"), {"Retry-After": "0"}))) as server:
            with self.assertRaises(InternalServerError):
                self.client(server, max_retries=0).platform.retrieve()
            self.assertEqual(len(server.all), 1)
            with self.assertRaises(InternalServerError):
                self.client(server).platform.retrieve(request_options={"max_retries": 1})
            self.assertEqual(len(server.all), 3)

    def test_backoff_is_exponential_from_half_a_second(self) -> None:
        with LocalServer(scripted(json_answer(500, error_body("internal_error")))) as server:
            start = time.monotonic()
            with self.assertRaises(InternalServerError):
                self.client(server).platform.retrieve()
            elapsed = time.monotonic() - start
            # 0.5 s then 1 s, each less up to 25 % jitter: 1.125 s to 1.5 s.
            self.assertGreaterEqual(elapsed, 1.1)
            self.assertLess(elapsed, 3.0)
        c = treasury.Treasury(api_key="k", base_url="http://x/v1")
        for attempt, top in ((0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)):
            d = c._backoff(attempt)
            self.assertTrue(0.75 * top <= d <= top, (attempt, d))

    def test_retry_after_is_honoured(self) -> None:
        with LocalServer(scripted(json_answer(429, error_body("rate_limited"), {"Retry-After": "1"}),
                                  json_answer(200, {"id": "plt_1"}))) as server:
            start = time.monotonic()
            self.assertEqual(self.client(server).platform.retrieve()["id"], "plt_1")
            self.assertGreaterEqual(time.monotonic() - start, 0.95)
            self.assertEqual(len(server.all), 2)

    def test_x_should_retry_overrides_the_default(self) -> None:
        # false on a 503: not retried
        with LocalServer(scripted(json_answer(503, error_body("unavailable"), {"x-should-retry": "false"}))) as server:
            with self.assertRaises(InternalServerError):
                self.client(server).platform.retrieve()
            self.assertEqual(len(server.all), 1)
        # true on a 409 the default would not retry
        with LocalServer(scripted(json_answer(409, error_body("invalid_state"),
                                              {"x-should-retry": "true", "Retry-After": "0"}),
                                  json_answer(200, {"id": "plt_1"}))) as server:
            self.assertEqual(self.client(server).platform.retrieve()["id"], "plt_1")
            self.assertEqual(len(server.all), 2)

    def test_idempotency_in_progress_is_retried_other_conflicts_not(self) -> None:
        with LocalServer(scripted(json_answer(409, error_body("idempotency_in_progress"), {"Retry-After": "0"}),
                                  json_answer(201, PAYMENT))) as server:
            self.client(server).payments.create(virtual_account_id="va_1", amount=1, rail="rtp", destination=DEST)
            self.assertEqual(len(server.all), 2)
            self.assertEqual(server.all[0].header("Idempotency-Key"), server.all[1].header("Idempotency-Key"))
        with LocalServer(scripted(json_answer(409, error_body("idempotency_conflict", resource_id="pay_0")))) as server:
            with self.assertRaises(ConflictError) as cm:
                self.client(server).payments.create(virtual_account_id="va_1", amount=1, rail="rtp",
                                                    destination=DEST)
            self.assertEqual(cm.exception.resource_id, "pay_0")
            self.assertEqual(len(server.all), 1)

    def test_408_is_retried_4xx_not(self) -> None:
        with LocalServer(scripted(json_answer(408, error_body("request_timeout"), {"Retry-After": "0"}),
                                  json_answer(200, {"id": "plt_1"}))) as server:
            self.client(server).platform.retrieve()
            self.assertEqual(len(server.all), 2)
        with LocalServer(scripted(json_answer(422, error_body("insufficient_funds")))) as server:
            with self.assertRaises(UnprocessableEntityError):
                self.client(server).platform.retrieve()
            self.assertEqual(len(server.all), 1)

    def test_the_class_of_each_status(self) -> None:
        table = [(400, BadRequestError), (401, AuthenticationError), (403, PermissionDeniedError),
                 (404, NotFoundError), (409, ConflictError), (422, UnprocessableEntityError),
                 (429, RateLimitError), (500, InternalServerError), (503, InternalServerError),
                 (501, treasury.NotImplementedAPIError),
                 (413, APIError)]
        for status, cls in table:
            with self.subTest(status=status):
                body = error_body("x", param="amount", resource_id="pay_9")
                with LocalServer(scripted(json_answer(status, body, {"x-should-retry": "false"}))) as server:
                    with self.assertRaises(cls) as cm:
                        self.client(server).platform.retrieve()
                    e = cm.exception
                    self.assertIsInstance(e, APIError)
                    self.assertEqual((e.status, e.code, e.param, e.request_id, e.resource_id, e.message),
                                     (status, "x", "amount", "req_stub", "pay_9", "x happened"))
                    self.assertIn("x happened", str(e))

    def test_a_non_json_error_body(self) -> None:
        with LocalServer(scripted((502, {"Content-Type": "text/html", "X-Request-Id": "req_h"}, b"<h1>Bad gateway</h1>"))) as s:
            with self.assertRaises(InternalServerError) as cm:
                self.client(s, max_retries=0).platform.retrieve()
            self.assertEqual(cm.exception.request_id, "req_h")
            self.assertIsNone(cm.exception.code)

    def test_connection_errors_are_retried_then_raised(self) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()  # nothing listens there now
        c = treasury.Treasury(api_key="k", base_url=f"http://127.0.0.1:{port}/v1")
        start = time.monotonic()
        with self.assertRaises(APIConnectionError):
            c.platform.retrieve()
        self.assertGreaterEqual(time.monotonic() - start, 1.1, "two retries with backoff")

    def test_pages_are_walked_with_the_cursor(self) -> None:
        pages = {
            None: {"object": "list", "data": [{"id": "pay_3"}, {"id": "pay_2"}], "has_more": True, "next_cursor": "c1"},
            "c1": {"object": "list", "data": [{"id": "pay_1"}], "has_more": False, "next_cursor": None},
        }

        def respond(r: support.Received):  # type: ignore[no-untyped-def]
            from urllib.parse import parse_qs, urlsplit
            q = parse_qs(urlsplit(r.path).query)
            self.assertEqual(q["limit"], ["2"])
            self.assertEqual(q["status"], ["completed"])
            return json_answer(200, pages[q.get("cursor", [None])[0]])

        with LocalServer(respond) as server:
            page = self.client(server).payments.list(limit=2, status="completed")
            self.assertEqual([p["id"] for p in page.data], ["pay_3", "pay_2"])
            self.assertEqual([p["id"] for p in page], ["pay_3", "pay_2", "pay_1"])
            self.assertEqual(len(list(page.iter_pages())), 2)

    def test_a_metadata_filter_is_a_deep_object_on_every_page(self) -> None:
        pages = {
            None: {"object": "list", "data": [{"id": "va_2"}], "has_more": True, "next_cursor": "c1"},
            "c1": {"object": "list", "data": [{"id": "va_1"}], "has_more": False, "next_cursor": None},
        }

        def respond(r: support.Received):  # type: ignore[no-untyped-def]
            from urllib.parse import parse_qs, urlsplit
            query = urlsplit(r.path).query
            self.assertIn("metadata%5Border+id%5D=A%26B", query, "key and value percent-encoded")
            q = parse_qs(query)
            self.assertEqual(q["metadata[order id]"], ["A&B"])
            self.assertEqual(q["metadata[tier]"], ["gold"])
            self.assertNotIn("metadata", q, "never a bare metadata=")
            return json_answer(200, pages[q.get("cursor", [None])[0]])

        with LocalServer(respond) as server:
            wanted = {"order id": "A&B", "tier": "gold"}
            page = self.client(server).virtual_accounts.list(metadata=wanted, limit=1)
            wanted["tier"] = "changed"  # the caller's dict changing later changes no page
            self.assertEqual([a["id"] for a in page], ["va_2", "va_1"])
            self.assertEqual(len(server.all), 2, "both pages asked with the filter")
        with LocalServer(scripted(json_answer(200, {"object": "list", "data": [], "has_more": False,
                                                    "next_cursor": None}))) as server:
            self.client(server).payments.list(metadata={})
            self.assertEqual(server.all[0].path, "/v1/payments", "an empty filter sends nothing")
            with self.assertRaises(TypeError):
                self.client(server).payments.list(metadata={"invoice": None})  # type: ignore[dict-item]

    def test_ids_are_quoted_into_one_path_segment(self) -> None:
        with LocalServer(scripted(json_answer(200, {"id": "x"}))) as server:
            self.client(server).payments.retrieve("../platform?x=1")
            self.assertEqual(server.all[0].path, "/v1/payments/..%2Fplatform%3Fx%3D1")
        with self.assertRaises(ValueError):
            treasury.Treasury(api_key="k").payments.retrieve("")

    def test_request_id_and_csv(self) -> None:
        with LocalServer(scripted((200, {"Content-Type": "text/csv"}, b"a,b\n1,2\n"))) as server:
            text = self.client(server).ledger.exports(created_after="2026-01-01",
                                                      request_options={"request_id": "my-req-1"})
            self.assertEqual(text, "a,b\n1,2\n")
            self.assertEqual(server.all[0].header("X-Request-Id"), "my-req-1")
            self.assertEqual(server.all[0].header("Accept"), "text/csv")

    def test_the_api_key_is_required(self) -> None:
        import os
        saved = os.environ.pop("TREASURY_API_KEY", None)
        try:
            with self.assertRaises(treasury.TreasuryError):
                treasury.Treasury()
        finally:
            if saved is not None:
                os.environ["TREASURY_API_KEY"] = saved


if __name__ == "__main__":
    unittest.main()
