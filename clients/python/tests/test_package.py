"""The package itself: version, typing marker, standard library only, public names."""

from __future__ import annotations

import ast
import os
import re
import unittest

import support

import treasury

SRC = os.path.join(support.ROOT, "src", "treasury")

# Every module the package may import: the standard library's, and its own.
STDLIB_USED = {
    "__future__", "base64", "binascii", "email", "hashlib", "hmac", "http", "json", "logging", "os",
    "random", "socket", "time", "typing", "urllib", "uuid",
}


class PackageTest(unittest.TestCase):
    def test_version(self) -> None:
        self.assertEqual(treasury.__version__, "1.3.0")
        with open(os.path.join(support.ROOT, "pyproject.toml"), encoding="utf-8") as f:
            pyproject = f.read()
        self.assertEqual(re.search(r'^version = "([^"]+)"', pyproject, re.M).group(1), treasury.__version__)  # type: ignore[union-attr]
        self.assertIn('requires-python = ">=3.9"', pyproject)
        self.assertRegex(pyproject, r"(?m)^dependencies = \[\]$")

    def test_typed(self) -> None:
        self.assertTrue(os.path.isfile(os.path.join(SRC, "py.typed")))

    def test_standard_library_only(self) -> None:
        for folder, _, files in os.walk(SRC):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read(), path)
                for node in ast.walk(tree):
                    if isinstance(node, ast.Import):
                        roots = {a.name.split(".")[0] for a in node.names}
                    elif isinstance(node, ast.ImportFrom) and node.level == 0:
                        roots = {(node.module or "").split(".")[0]}
                    else:
                        continue
                    with self.subTest(file=os.path.relpath(path, SRC), imports=sorted(roots)):
                        self.assertEqual(roots - STDLIB_USED, set())

    def test_public_names(self) -> None:
        for name in treasury.__all__:
            self.assertTrue(hasattr(treasury, name), name)
        for name in ("BadRequestError", "AuthenticationError", "PermissionDeniedError", "NotFoundError",
                     "ConflictError", "UnprocessableEntityError", "RateLimitError", "InternalServerError",
                     "NotImplementedAPIError"):
            self.assertTrue(issubclass(getattr(treasury, name), treasury.APIError), name)
        self.assertTrue(callable(treasury.webhooks.verify))

    def test_public_api_is_documented(self) -> None:
        client = treasury.Treasury(api_key="k", base_url="http://127.0.0.1:9/v1")
        from routes import ROUTES
        for route, get in ROUTES.items():
            with self.subTest(route=route):
                self.assertTrue((get(client).__doc__ or "").strip(), f"{route}: no docstring")


if __name__ == "__main__":
    unittest.main()
