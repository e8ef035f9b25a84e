"""The OpenAPI 3.1 description of the service; the record itself is the JSON Schema at
/v1/schema, referenced rather than copied so that there is one contract."""

from __future__ import annotations

from .encodings import ACCEPTED
from .metrics import VERDICTS


def _error(description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


_str = {"type": "string"}
_game = {"enum": ["slow6", "slide"]}
_ruleset = {"application/json": {"schema": {"$ref": "#/components/schemas/Ruleset"}}}
_rulesets = {
    "type": "object",
    "properties": {
        "rulesets": {"type": "array", "items": {"$ref": "#/components/schemas/Ruleset"}}
    },
}


def document(config: dict) -> dict:
    max_body, max_lines = config["BALANCE_MAX_BODY"], config["BALANCE_MAX_LINES"]
    results = {"application/json": {"schema": {"$ref": "#/components/schemas/Results"}}}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Slow6 / Slide game upload service",
            "version": "1",
            "description": "Anonymous upload of finished games (upload format, schema 1). "
            "Every record is checked and replayed before it is acknowledged; see docs/ingest.md.",
        },
        "paths": {
            "/v1/games": {
                "post": {
                    "summary": "Upload one game (application/json) or a batch (NDJSON)",
                    "description": f"A batch is one record a line, at most {max_lines} records "
                    f"and {max_body} bytes; blank lines are skipped. A record is at most 64 KiB. "
                    "Each record gets its own verdict, in order. The body may be compressed "
                    "(Content-Encoding gzip, or deflate: zlib or raw); it is inflated as it is "
                    "read, and the limits apply to the inflated body.",
                    "parameters": [
                        {
                            "name": "Content-Encoding",
                            "in": "header",
                            "required": False,
                            "description": "How the body is compressed, if at all (one "
                            "coding); x-gzip is read as gzip. Any other: 415",
                            "schema": {"type": "string", "enum": list(ACCEPTED)},
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": "/v1/schema"}},
                            "application/x-ndjson": {
                                "schema": {
                                    "type": "string",
                                    "description": "one upload record (/v1/schema) a line",
                                },
                            },
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "Processed: one result per record (a batch may "
                            "hold rejected lines)",
                            "content": results,
                        },
                        "400": {
                            "description": "Empty body, no record in it is JSON, or the body "
                            "is not valid in its Content-Encoding (`encoding` names it)",
                            "content": results,
                        },
                        "413": _error("Body, record or batch over its limit; nothing stored"),
                        "415": _error(
                            "Not application/json or application/x-ndjson, or a "
                            "Content-Encoding other than identity, gzip or deflate (the answer's "
                            "`accepted` lists them)"
                        ),
                        "422": {
                            "description": "The single JSON record was rejected (not "
                            "well-formed; see field and message)",
                            "content": results,
                        },
                        "408": _error(
                            "The body did not arrive within BALANCE_BODY_TIMEOUT, or arrived "
                            "slower than BALANCE_BODY_MIN_RATE; nothing stored"
                        ),
                        "429": _error(
                            "Rate limited, or this address already has its share of the "
                            "uploads in flight: retry after the Retry-After seconds"
                        ),
                        "503": _error(
                            "Storage busy, full or failing (reason says which), too many "
                            "uploads in flight, or shutting down: nothing stored; retry after "
                            "the Retry-After seconds"
                        ),
                    },
                }
            },
            "/v1/schema": {
                "get": {
                    "summary": "The JSON Schema of an upload record",
                    "responses": {
                        "200": {
                            "description": "JSON Schema 2020-12",
                            "content": {"application/schema+json": {}},
                        }
                    },
                }
            },
            "/healthz": {
                "get": {
                    "summary": "Uploads can be stored (runs a query)",
                    "responses": {
                        "200": {"description": "ok"},
                        "503": _error(
                            "Uploads cannot be stored now: reason says why (disk full, "
                            "I/O error); Retry-After"
                        ),
                    },
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics (text format 0.0.4)",
                    "responses": {"200": {"description": "metrics", "content": {"text/plain": {}}}},
                }
            },
            "/v1/rulesets": {
                "get": {
                    "summary": "The rulesets this server judges by: `standard` of each game "
                    "and every registered one, with its parameters (public)",
                    "responses": {
                        "200": {
                            "description": '{"rulesets": [Ruleset, ...]}',
                            "content": {"application/json": {"schema": _rulesets}},
                        }
                    },
                }
            },
            "/v1/rulesets/{game}/{name}": {
                "get": {
                    "summary": "One ruleset (public)",
                    "parameters": [
                        {"name": "game", "in": "path", "required": True, "schema": _game},
                        {"name": "name", "in": "path", "required": True, "schema": _str},
                    ],
                    "responses": {
                        "200": {"description": "the ruleset", "content": _ruleset},
                        "404": _error("not registered for that game"),
                    },
                }
            },
            "/v1/admin/rulesets": {
                "post": {
                    "summary": "Register rulesets (Bearer BALANCE_TOKEN): one TOML file "
                    "(rulesets.md RS4.1) as application/toml, or several as JSON "
                    '{"files": [{"name": "freeze-1.toml", "toml": "..."}]}; all or none',
                    "security": [{"bearer": []}],
                    "responses": {
                        "200": {"description": "each ruleset's status: added or unchanged"},
                        "400": _error("an invalid file: `param` names the parameter, `file` it"),
                        "401": _error("missing or wrong token"),
                        "403": _error("no BALANCE_TOKEN configured"),
                        "409": _error(
                            "RS1.3: the name is registered with other parameters (`param`: "
                            "the first that differs), or it is `standard`"
                        ),
                    },
                }
            },
            "/v1/admin/reverify": {
                "post": {
                    "summary": "Re-run the verifier over all stored records (Bearer BALANCE_TOKEN)",
                    "security": [{"bearer": []}],
                    "responses": {
                        "200": {"description": "what changed"},
                        "401": _error("missing or wrong token"),
                        "403": _error("no BALANCE_TOKEN configured"),
                    },
                }
            },
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Result": {
                    "type": "object",
                    "required": [
                        "line",
                        "game_id",
                        "verdict",
                        "rule",
                        "turn",
                        "message",
                        "field",
                        "ruleset",
                    ],
                    "properties": {
                        "line": {"type": "integer", "description": "0-based line of the body"},
                        "game_id": {"type": ["string", "null"]},
                        "verdict": {"enum": list(VERDICTS)},
                        "rule": {
                            "type": ["string", "null"],
                            "description": "quarantined: the first broken rule (R2.2, S2.4); "
                            "RS5.1: the record names a ruleset this server does not know (kept, "
                            "and judged again by `balance reverify` once it is registered)",
                        },
                        "turn": {
                            "type": ["integer", "null"],
                            "description": "quarantined: "
                            "0-based turn (Slow6) or round (Slide); null = whole record",
                        },
                        "seat": {
                            "type": ["integer", "null"],
                            "description": "Slide quarantine only: the seat at fault",
                        },
                        "message": {"type": ["string", "null"]},
                        "field": {
                            "type": ["string", "null"],
                            "description": "rejected: the field at fault (`ruleset` for a name "
                            "that is not RS1.1's form)",
                        },
                        "ruleset": {
                            "type": ["string", "null"],
                            "description": "accepted or quarantined: the ruleset the record was "
                            "judged under (its top-level `ruleset`, `standard` when left out; "
                            "RS5.3); RS5.1: the unknown one it names; null for the other verdicts",
                        },
                    },
                },
                "Ruleset": {
                    "type": "object",
                    "required": ["name", "game", "description", "params", "builtin"],
                    "properties": {
                        "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$"},
                        "game": {"enum": ["slow6", "slide"]},
                        "description": {"type": "string"},
                        "params": {
                            "type": "object",
                            "description": "every parameter of rulesets.md RS3 for its game, "
                            "resolved (based_on included)",
                        },
                        "builtin": {"type": "boolean", "description": "`standard`"},
                        "registered_at": {"type": ["string", "null"], "format": "date-time"},
                    },
                },
                "Results": {
                    "type": "object",
                    "required": ["results"],
                    "properties": {
                        "results": {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/Result"},
                        }
                    },
                },
                "Error": {
                    "type": "object",
                    "required": ["error", "message", "status"],
                    "properties": {
                        "error": {"type": "string"},
                        "message": {"type": "string"},
                        "status": {"type": "integer"},
                    },
                },
            },
        },
    }
