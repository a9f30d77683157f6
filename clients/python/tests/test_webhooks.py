"""treasury.webhooks.verify, offline (a real delivery is verified in test_integration)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import unittest

import support  # noqa: F401

import treasury
from treasury import WebhookVerificationError, webhooks

SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef0123456789abcdef").decode()
OTHER = "whsec_" + base64.b64encode(b"another key of thirty-two bytes!").decode()
BODY = json.dumps({"id": "evt_1", "object": "event", "type": "webhook.test", "data": {"object": {}}}).encode()


def headers(body: bytes = BODY, secret: str = SECRET, ts: int = 0, msg_id: str = "msg_1", sig: str = "") -> dict:
    ts = ts or int(time.time())
    return {"webhook-id": msg_id, "webhook-timestamp": str(ts),
            "webhook-signature": sig or webhooks.sign(msg_id, ts, body, secret)}


class VerifyTest(unittest.TestCase):
    def test_a_valid_delivery_returns_the_event(self) -> None:
        event = treasury.webhooks.verify(BODY, headers(), SECRET)
        self.assertEqual(event["id"], "evt_1")
        self.assertEqual(event["type"], "webhook.test")

    def test_the_signature_is_the_standard_webhooks_scheme(self) -> None:
        ts = 1_700_000_000
        key = base64.b64decode(SECRET[len("whsec_"):])
        want = base64.b64encode(hmac.new(key, b"msg_1.%d." % ts + BODY, hashlib.sha256).digest()).decode()
        self.assertEqual(webhooks.sign("msg_1", ts, BODY, SECRET), "v1," + want)

    def test_str_body_and_any_header_case(self) -> None:
        h = {k.title(): v for k, v in headers().items()}
        self.assertEqual(webhooks.verify(BODY.decode(), h, SECRET)["id"], "evt_1")
        self.assertEqual(webhooks.verify(BODY, list(h.items()), SECRET)["id"], "evt_1")

    def test_several_signatures_during_a_rotation(self) -> None:
        ts = int(time.time())
        both = " ".join([webhooks.sign("msg_1", ts, BODY, OTHER), webhooks.sign("msg_1", ts, BODY, SECRET)])
        h = headers(ts=ts, sig=both)
        self.assertEqual(webhooks.verify(BODY, h, SECRET)["id"], "evt_1")
        self.assertEqual(webhooks.verify(BODY, h, OTHER)["id"], "evt_1")
        self.assertEqual(webhooks.verify(BODY, headers(secret=OTHER), [SECRET, OTHER])["id"], "evt_1")

    def test_unknown_versions_are_ignored(self) -> None:
        ts = int(time.time())
        sig = "v2,abc v1a,xyz " + webhooks.sign("msg_1", ts, BODY, SECRET)
        self.assertEqual(webhooks.verify(BODY, headers(ts=ts, sig=sig), SECRET)["id"], "evt_1")

    def test_a_tampered_body_is_rejected(self) -> None:
        h = headers()
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(BODY.replace(b"webhook.test", b"payment.completed"), h, SECRET)

    def test_a_wrong_secret_is_rejected(self) -> None:
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(BODY, headers(), OTHER)

    def test_a_changed_id_or_timestamp_is_rejected(self) -> None:
        h = headers()
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(BODY, dict(h, **{"webhook-id": "msg_2"}), SECRET)
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(BODY, dict(h, **{"webhook-timestamp": str(int(h["webhook-timestamp"]) + 1)}), SECRET)

    def test_the_timestamp_tolerance_is_five_minutes(self) -> None:
        now = 1_700_000_000
        for offset, ok in ((-299, True), (299, True), (-301, False), (301, False)):
            with self.subTest(offset=offset):
                h = headers(ts=now + offset)
                if ok:
                    webhooks.verify(BODY, h, SECRET, now=now)
                else:
                    with self.assertRaises(WebhookVerificationError):
                        webhooks.verify(BODY, h, SECRET, now=now)
        webhooks.verify(BODY, headers(ts=now - 600), SECRET, now=now, tolerance=900)

    def test_missing_or_malformed_headers(self) -> None:
        h = headers()
        for name in ("webhook-id", "webhook-timestamp", "webhook-signature"):
            with self.subTest(missing=name):
                with self.assertRaises(WebhookVerificationError):
                    webhooks.verify(BODY, {k: v for k, v in h.items() if k != name}, SECRET)
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(BODY, dict(h, **{"webhook-timestamp": "soon"}), SECRET)
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(BODY, dict(h, **{"webhook-signature": "v1,"}), SECRET)
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(BODY, h, "whsec_***not base64***")

    def test_it_is_a_treasury_error_and_a_value_error(self) -> None:
        self.assertTrue(issubclass(WebhookVerificationError, treasury.TreasuryError))
        self.assertTrue(issubclass(WebhookVerificationError, ValueError))

    def test_a_parsed_body_is_refused(self) -> None:
        with self.assertRaises(TypeError):
            webhooks.verify(json.loads(BODY), headers(), SECRET)  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
