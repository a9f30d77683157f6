"""The client against the OpenAPI document (../../http/openapi.json), offline.

* every route has a client method (tests/routes.py), and no method names a route
  the document lacks;
* each method's parameters are the route's: path parameters positional, query
  parameters and body properties keyword arguments (a property added to a request
  body fails here until the method takes it);
* each method's return type (a TypedDict of treasury.types, or Page[...] of one)
  has exactly the properties of the response schema, recursively, with the same
  types, nullability and enum values (a property added to a response fails here
  until the model has it).
"""

from __future__ import annotations

import inspect
import re
import typing
import unittest
from typing import Any, Dict, List, Optional, Set, Tuple, Union

import support
from routes import NOT_CLIENT_METHODS, ROUTES

import treasury
from treasury import NotGiven, Page

DOC = support.load_openapi()
NoneType = type(None)
HTTP_METHODS = ("get", "post", "put", "patch", "delete")

# Keyword arguments every method may take beyond the API's parameters.
CLIENT_OPTIONS = {"request_options"}


def operations() -> Dict[str, Dict[str, Any]]:
    ops = {}
    for path, item in DOC["paths"].items():
        for method in HTTP_METHODS:
            if method in item:
                ops[f"{method.upper()} {path}"] = item[method]
    return ops


def deref(node: Dict[str, Any]) -> Dict[str, Any]:
    seen = 0
    while "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        target: Any = DOC
        for part in ref[2:].split("/"):
            target = target[part]
        node = target
        seen += 1
        assert seen < 50, ref
    return node


def parameters(op: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [deref(p) for p in op.get("parameters", [])]


# -- schema normalisation ---------------------------------------------------------

class Shape:
    """A schema reduced to what the models must agree with."""

    def __init__(self) -> None:
        self.types: Set[str] = set()
        self.nullable = False
        self.properties: Dict[str, Dict[str, Any]] = {}
        self.required: Set[str] = set()
        self.items: Optional[Dict[str, Any]] = None
        self.enum: Optional[Set[Any]] = None


def shape(schema: Dict[str, Any]) -> Shape:
    s = deref(schema)
    out = Shape()

    def absorb(sub: Shape, with_required: bool) -> None:
        out.types |= sub.types
        out.nullable |= sub.nullable
        for k, v in sub.properties.items():
            out.properties.setdefault(k, v)
        if with_required:
            out.required |= sub.required
        if sub.items is not None:
            out.items = sub.items
        if sub.enum is not None:
            out.enum = (out.enum or set()) | sub.enum

    for sub in s.get("allOf", []):
        absorb(shape(sub), with_required=True)
    for key in ("anyOf", "oneOf"):
        alternatives = [shape(a) for a in s.get(key, [])]
        non_null = []
        for alt in alternatives:
            if alt.nullable and not alt.types and not alt.properties:
                out.nullable = True
            else:
                non_null.append(alt)
        for alt in non_null:
            absorb(alt, with_required=False)
        if non_null:  # required in every alternative
            out.required |= set.intersection(*(a.required for a in non_null))
    t = s.get("type")
    for name in ([t] if isinstance(t, str) else (t or [])):
        if name == "null":
            out.nullable = True
        else:
            out.types.add(name)
    if "null" in out.types:
        out.types.discard("null")
        out.nullable = True
    out.properties.update(s.get("properties", {}))
    out.required |= set(s.get("required", []))
    if "items" in s:
        out.items = s["items"]
    if "enum" in s:
        values = set(s["enum"])
        if None in values:
            out.nullable = True
            values.discard(None)
        out.enum = values
    if out.properties and not out.types:
        out.types.add("object")
    return out


# -- annotation normalisation -----------------------------------------------------

def is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


class Ann:
    """An annotation reduced the same way."""

    def __init__(self) -> None:
        self.kinds: Set[str] = set()
        self.nullable = False
        self.typeddict: Optional[type] = None
        self.item: Any = None
        self.enum: Optional[Set[Any]] = None
        self.any = False


def ann(tp: Any) -> Ann:
    out = Ann()

    def walk(t: Any) -> None:
        origin = typing.get_origin(t)
        if t is NoneType:
            out.nullable = True
        elif t is NotGiven:
            pass
        elif t is Any:
            out.any = True
        elif origin is Union:
            for a in typing.get_args(t):
                walk(a)
        elif origin is typing.Literal:
            values = set(typing.get_args(t))
            out.enum = (out.enum or set()) | values
            for v in values:
                out.kinds.add({str: "string", int: "integer", bool: "boolean"}[type(v)])
        elif origin in (list, List):
            out.kinds.add("array")
            out.item = typing.get_args(t)[0]
        elif origin in (dict, Dict) or t is dict:
            out.kinds.add("object")
        elif is_typeddict(t):
            out.kinds.add("object")
            out.typeddict = t
        elif t is str:
            out.kinds.add("string")
        elif t is bool:
            out.kinds.add("boolean")
        elif t is int:
            out.kinds.add("integer")
        elif t is float:
            out.kinds.add("number")
        else:
            raise AssertionError(f"unexpected annotation {t!r}")

    walk(tp)
    return out


def compare(tp: Any, schema: Dict[str, Any], where: str, *, check_nullable: bool = True) -> List[str]:
    """Differences between an annotation and a schema, recursively."""
    problems: List[str] = []
    s = shape(schema)
    a = ann(tp)
    if a.any or not s.types and not s.nullable:
        return problems  # a schema without a type (anything goes)
    if s.types != a.kinds:
        problems.append(f"{where}: schema type {sorted(s.types)}{' | null' if s.nullable else ''}, "
                        f"model {sorted(a.kinds)}{' | None' if a.nullable else ''}")
        return problems
    if check_nullable and s.nullable != a.nullable:
        problems.append(f"{where}: schema {'is' if s.nullable else 'is not'} nullable, "
                        f"model {'is' if a.nullable else 'is not'} Optional")
    if s.enum is not None or a.enum is not None:
        if s.enum != a.enum:
            problems.append(f"{where}: schema enum {sorted(map(str, s.enum or []))}, "
                            f"model Literal {sorted(map(str, a.enum or []))}")
    if "object" in s.types:
        if s.properties:
            if a.typeddict is None:
                problems.append(f"{where}: schema has properties {sorted(s.properties)}, model is a plain dict")
            else:
                problems += compare_typeddict(a.typeddict, s, where)
        elif a.typeddict is not None:
            problems.append(f"{where}: schema is a free-form object, model {a.typeddict.__name__} has fields")
    if "array" in s.types and s.items is not None and a.item is not None:
        problems += compare(a.item, s.items, where + "[]")
    return problems


def compare_typeddict(td: type, s: Shape, where: str) -> List[str]:
    problems: List[str] = []
    hints = typing.get_type_hints(td)
    name = f"{where} ({td.__name__})"
    missing = set(s.properties) - set(hints)
    extra = set(hints) - set(s.properties)
    if missing:
        problems.append(f"{name}: the model lacks {sorted(missing)}")
    if extra:
        problems.append(f"{name}: the schema has no {sorted(extra)}")
    promised = set(td.__required_keys__) - s.required  # type: ignore[attr-defined]
    if promised:
        problems.append(f"{name}: the model makes {sorted(promised)} required; the schema does not")
    for key in sorted(set(hints) & set(s.properties)):
        problems += compare(hints[key], s.properties[key], f"{where}.{key}")
    return problems


# -- the tests ----------------------------------------------------------------------

CLIENT = treasury.Treasury(api_key="sk_sandbox_offline", base_url="http://127.0.0.1:9/v1")


class RoutesTest(unittest.TestCase):
    def test_every_route_has_a_method(self) -> None:
        in_doc = set(operations()) - NOT_CLIENT_METHODS
        self.assertEqual(sorted(in_doc - set(ROUTES)), [], "routes of openapi.json without a client method")
        self.assertEqual(sorted(set(ROUTES) - in_doc), [], "client methods of routes openapi.json lacks")

    def test_every_post_takes_an_idempotency_key(self) -> None:
        for route, get in ROUTES.items():
            if route.startswith("POST "):
                with self.subTest(route=route):
                    self.assertIn("idempotency_key", inspect.signature(get(CLIENT)).parameters)


class ParametersTest(unittest.TestCase):
    def test_methods_take_the_route_parameters(self) -> None:
        ops = operations()
        for route, get in sorted(ROUTES.items()):
            with self.subTest(route=route):
                op = ops[route]
                method = get(CLIENT)
                sig = inspect.signature(method)
                hints = typing.get_type_hints(method)
                positional = [p.name for p in sig.parameters.values()
                              if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
                keywords = {p.name: p for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
                params = parameters(op)
                in_path = [p["name"] for p in params if p["in"] == "path"]
                self.assertEqual(len(positional), len(in_path),
                                 f"{route}: positional {positional} for path parameters {in_path}")
                self.assertEqual(len(re.findall(r"\{[^}]+\}", route)), len(in_path))
                wire = {name.rstrip("_"): name for name in keywords} if keywords else {}
                expected: Set[str] = {p["name"] for p in params if p["in"] == "query"}
                for p in params:
                    if p["in"] == "query" and p.get("required"):
                        self.assertIs(keywords[wire[p["name"]]].default, inspect.Parameter.empty,
                                      f"{route}: the required query parameter {p['name']} has a default")
                body_props: Dict[str, Any] = {}
                body_schema = None
                content = op.get("requestBody", {}).get("content", {})
                if "application/json" in content:
                    body_schema = content["application/json"]["schema"]
                    body_shape = shape(body_schema)
                    body_props = body_shape.properties
                    expected |= set(body_props)
                    # The client fills idempotency_key itself (the caller's, else a random key).
                    for name in body_shape.required - {"idempotency_key"}:
                        self.assertIs(keywords[name].default, inspect.Parameter.empty,
                                      f"{route}: the required body property {name} has a default")
                got = set(wire) - CLIENT_OPTIONS
                if route.startswith("POST ") and "idempotency_key" not in expected:
                    got.discard("idempotency_key")  # sent as the Idempotency-Key header
                self.assertEqual(sorted(got - expected), [], f"{route}: arguments the API does not take")
                self.assertEqual(sorted(expected - got), [], f"{route}: API parameters the method lacks")
                for name, schema in body_props.items():
                    problems = compare(hints[wire[name]], schema, f"{route} body.{name}", check_nullable=False)
                    self.assertEqual(problems, [])
                for p in params:
                    if p["in"] == "query" and p["name"] not in body_props:
                        # Its type too: a deepObject filter (metadata) is a dict, not a string.
                        problems = compare(hints[wire[p["name"]]], p.get("schema", {}), f"{route} query {p['name']}",
                                           check_nullable=False)
                        self.assertEqual(problems, [])


def returned_models(route: str, method: Any) -> List[Tuple[str, Any]]:
    """(content type, annotation) pairs the method's return type offers."""
    ret = typing.get_type_hints(method)["return"]
    members = typing.get_args(ret) if typing.get_origin(ret) is Union else (ret,)
    return [("text/plain" if m is str else "application/json", m) for m in members]


class ModelsTest(unittest.TestCase):
    def test_return_types_match_the_response_schemas(self) -> None:
        ops = operations()
        for route, get in sorted(ROUTES.items()):
            op = ops[route]
            method = get(CLIENT)
            offered = returned_models(route, method)
            for status, response in op["responses"].items():
                if not status.startswith("2"):
                    continue
                for ctype, media in deref(response).get("content", {}).items():
                    with self.subTest(route=route, status=status, content=ctype):
                        schema = media.get("schema", {})
                        if ctype == "application/json":
                            models = [m for c, m in offered if c == "application/json"]
                            self.assertTrue(models, f"{route} answers JSON; the method returns text")
                            model = models[0]
                            if typing.get_origin(model) is Page:
                                s = shape(schema)
                                self.assertEqual(set(s.properties), {"object", "data", "has_more", "next_cursor"},
                                                 f"{route}: a list answer of other fields than Page reads")
                                problems = compare(typing.get_args(model)[0], s.properties["data"]["items"],
                                                   route + " data[]")
                            else:
                                problems = compare(model, schema, route)
                            self.assertEqual(problems, [])
                        else:
                            self.assertIn("text/plain", [c for c, _ in offered],
                                          f"{route} answers {ctype}; the method does not return text")
                            self.assertEqual(deref(schema).get("type"), "string")

    def test_every_response_schema_has_a_model(self) -> None:
        """Every component schema a 2xx answer uses is compared by the test above."""
        used: Set[str] = set()

        def collect(node: Any) -> None:
            if isinstance(node, dict):
                if "$ref" in node and node["$ref"].startswith("#/components/schemas/"):
                    name = node["$ref"].rsplit("/", 1)[1]
                    if name not in used:
                        used.add(name)
                        collect(DOC["components"]["schemas"][name])
                for v in node.values():
                    collect(v)
            elif isinstance(node, list):
                for v in node:
                    collect(v)

        ops = operations()
        for route in ROUTES:
            for status, response in ops[route]["responses"].items():
                if status.startswith("2"):
                    collect(deref(response))
        list_wrappers = {n for n in used if n.endswith("List")}
        free_form = {"Metadata"}
        modelled = {name for name in dir(treasury.types) if is_typeddict(getattr(treasury.types, name))}
        lacking = used - list_wrappers - free_form - modelled
        self.assertEqual(sorted(lacking), [], "response schemas without a model in treasury.types")
        for name in sorted(used & modelled):
            with self.subTest(schema=name):
                self.assertEqual(compare(getattr(treasury.types, name), {"$ref": "#/components/schemas/" + name},
                                         name), [])

    def test_error_codes(self) -> None:
        from treasury.types import ErrorCode
        self.assertEqual(set(typing.get_args(ErrorCode)),
                         set(DOC["components"]["schemas"]["Error"]["properties"]["code"]["enum"]))


class CheckerTest(unittest.TestCase):
    """The checker itself notices a drift."""

    def test_a_missing_property_is_reported(self) -> None:
        schema = {"type": "object", "required": ["id"],
                  "properties": {"id": {"type": "string"}, "new_field": {"type": "string"}}}
        from treasury.types import KYBReview
        problems = compare(KYBReview, schema, "X")
        self.assertTrue(any("lacks ['id', 'new_field']" in p for p in problems), problems)

    def test_an_enum_value_is_reported(self) -> None:
        from treasury.types import Rail
        self.assertTrue(compare(Rail, {"type": "string", "enum": ["rtp", "wire"]}, "X"))
        self.assertFalse(compare(Rail, {"type": "string", "enum": ["ach_standard", "ach_same_day", "rtp", "fednow"]},
                                 "X"))

    def test_nullability_is_reported(self) -> None:
        self.assertTrue(compare(str, {"type": ["string", "null"]}, "X"))
        self.assertFalse(compare(Optional[str], {"anyOf": [{"type": "string"}, {"type": "null"}]}, "X"))


if __name__ == "__main__":
    unittest.main()
