"""The config checked against its schema once, a mistake said in one line.

Snakemake's ``validate`` checks the config and fills the schema's defaults; when it refuses the
config, :func:`first_mistake` runs the same schema through jsonschema to name the one mistake a
user should fix first: the file, the key path, the value found and what was expected (an unknown
key names the nearest known one), instead of Snakemake's dump of the whole schema.
"""

from __future__ import annotations

import difflib
from pathlib import Path

TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false",
              "object": "a mapping of keys", "array": "a list", "null": "nothing (null)"}
BOUNDS = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}  # in words


class ConfigSchemaError(ValueError):
    """A config the schema refuses; the message is one line: file, key path, found, expected."""


def _path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _expected(error) -> str:
    """What the schema asked for at the failing key, in words."""
    v, value = error.validator, error.validator_value
    if v == "type":
        return _type_words(value, error.schema)
    if v == "enum":
        return "one of " + ", ".join(repr(x) for x in value)
    if v == "const":
        return repr(value)
    if v in BOUNDS:
        return f"a number {BOUNDS[v]} {value}"
    if v in ("minItems", "maxItems"):
        return f"a list of {'at least' if v == 'minItems' else 'at most'} {value} entries"
    if v == "minLength":
        return f"a string of at least {value} characters"
    if v == "pattern":
        return f"a string matching {value}"
    if v == "uniqueItems":
        return "a list without repeated entries"
    if v in ("anyOf", "oneOf") and all(_plain(s) for s in value):  # e.g. an integer, null or 'auto'
        return " or ".join(_plain(s) for s in value)
    description = error.schema.get("description") if isinstance(error.schema, dict) else None
    return description or error.message


def _plain(schema) -> str | None:
    """A sub-schema of one type, enum or const in words (:func:`_expected`'s), None for another."""
    if not isinstance(schema, dict) or not set(schema) <= {"type", *BOUNDS, "enum", "const"}:
        return None
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(repr(x) for x in schema["enum"])
    if "type" not in schema:
        return None
    return _type_words(schema["type"], schema)


def _type_words(value, schema: dict) -> str:
    """Schema ``type`` ``value`` in words, with the bounds ``schema`` puts on it."""
    types = [value] if isinstance(value, str) else list(value)
    limits = [f"{sign} {schema[k]}" for k, sign in BOUNDS.items() if k in schema]
    return " or ".join(TYPE_WORDS.get(t, t) for t in types) + "".join(f" {x}" for x in limits)


def first_mistake(config: dict, schema: dict, source: str) -> str | None:
    """The one line naming the config's most relevant schema error (jsonschema's ``best_match``),
    or None when the schema accepts the config."""
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(config))
    if error is None:
        return None
    where = list(error.absolute_path)
    if error.validator == "required":
        known = error.schema.get("properties") or _properties(schema, list(error.absolute_schema_path)[:-1])
        missing = [k for k in error.validator_value if k not in error.instance]
        key = missing[0] if missing else "?"
        what = _described(schema, known.get(key))
        return f"{source}: {_path(where + [key])}: missing; expected {what or 'this key'}"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list(error.schema.get("properties", {}))
        unknown = [k for k in error.instance if k not in known]
        key = unknown[0] if unknown else "?"
        near = difflib.get_close_matches(str(key), known, n=1)
        hint = f"did you mean '{near[0]}'?" if near else "expected one of " + ", ".join(known)
        return f"{source}: {_path(where + [key])}: unknown key; {hint}"
    return f"{source}: {_path(where)}: expected {_expected(error)}, found {error.instance!r}"


def _described(schema: dict, prop) -> str | None:
    """A property's schema in words: its description, else its type or values (a local ``$ref``
    followed to the definition in ``schema``)."""
    if isinstance(prop, dict) and str(prop.get("$ref", "")).startswith("#/"):
        target = schema
        for part in prop["$ref"][2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        prop = target
    if not isinstance(prop, dict):
        return None
    return prop.get("description") or _plain(prop)


def _properties(schema: dict, path: list) -> dict:
    """The ``properties`` of the object schema at ``path`` in ``schema``, or of the nearest one above it
    (a ``required`` in an if/then or allOf branch names keys its object's ``properties`` describe)."""
    nodes = [schema]
    for part in path:  # a path through a $ref stops where the ref is: its target is elsewhere
        try:
            nodes.append(nodes[-1][part])
        except (KeyError, IndexError, TypeError):
            break
    return next((n["properties"] for n in reversed(nodes) if isinstance(n, dict) and "properties" in n), {})


def validate_config(config: dict, schema_path: str | Path, source: str) -> None:
    """Snakemake's ``validate`` (which fills the schema's defaults into ``config``); a refused config
    raises :class:`ConfigSchemaError` with :func:`first_mistake`'s line."""
    import yaml
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    try:
        validate(config, str(schema_path))
    except WorkflowError:
        schema = yaml.safe_load(Path(schema_path).read_text())
        line = first_mistake(config, schema, source)
        raise ConfigSchemaError(line or f"{source}: refused by {schema_path}") from None
