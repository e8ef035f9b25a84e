"""Settings are read once, by their layer's table: no module but the tables
(ingest/storage/settings.py, analysis/settings.py, dashboard/settings.py,
ingest/server/config.py) reads a `BALANCE_*` variable from the environment. Commands and app
factories read a setting through their layer's table and pass it down. Read from the source
(every function included), as tests/test_layers.py reads the imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("replays", "ingest", "analysis", "dashboard")
TABLES = {
    "ingest/storage/settings.py",
    "analysis/settings.py",
    "dashboard/settings.py",
    "ingest/server/config.py",
}
PREFIX = "BALANCE_"


def _is_environ(node: ast.AST, aliases: set[str]) -> bool:
    """`os.environ`, a bare `environ` (from os import environ) or a name bound to either."""
    if isinstance(node, ast.Attribute) and node.attr == "environ":
        return isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and (node.id == "environ" or node.id in aliases)


def _constants(tree: ast.Module) -> dict[str, set[str]]:
    """Module-level names bound to a string, or to a dict / tuple / list holding strings."""
    out: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            strings = {
                n.value
                for n in ast.walk(node.value)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
            }
            for t in targets:
                if isinstance(t, ast.Name) and strings:
                    out[t.id] = strings
    return out


def _names_a_setting(key: ast.AST, constants: dict[str, set[str]]) -> bool:
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value.startswith(PREFIX)
    if isinstance(key, ast.JoinedStr) and key.values:  # f"BALANCE_{name}"
        return _names_a_setting(key.values[0], constants)
    if isinstance(key, ast.BinOp):  # "BALANCE_" + name
        return _names_a_setting(key.left, constants)
    if isinstance(key, ast.Name):  # a constant of the module (or one imported by its name)
        return any(s.startswith(PREFIX) for s in constants.get(key.id, ()))
    if isinstance(key, ast.Subscript):  # _VARIABLE[kind]
        return _names_a_setting(key.value, constants)
    return False


def reads(source: str, constants: dict[str, set[str]] | None = None) -> list[int]:
    """Lines of `source` that read a BALANCE_* variable from the environment."""
    tree = ast.parse(source)
    constants = {**(constants or {}), **_constants(tree)}
    aliases: set[str] = set()
    for node in ast.walk(tree):  # env = os.environ if env is None else env
        if isinstance(node, ast.Assign) and any(
            _is_environ(n, set()) for n in ast.walk(node.value)
        ):
            aliases |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in ("get", "pop"):
                if _is_environ(f.value, aliases):
                    key = node.args[0]
            elif (isinstance(f, ast.Attribute) and f.attr == "getenv") or (
                isinstance(f, ast.Name) and f.id == "getenv"
            ):
                key = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if _is_environ(node.value, aliases):
                key = node.slice
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            if _is_environ(node.comparators[0], aliases):
                key = node.left
        if key is not None and _names_a_setting(key, constants):
            found.append(node.lineno)
    return found


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_only_the_settings_tables_read_balance_variables_from_the_environment():
    texts = {p: p.read_text(encoding="utf-8") for p in _sources()}
    everywhere: dict[str, set[str]] = {}  # PORT_ENV in serve.py, imported by wsgi.py
    for text in texts.values():
        for name, strings in _constants(ast.parse(text)).items():
            everywhere.setdefault(name, set()).update(strings)
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path, text in texts.items()
        if str(path.relative_to(ROOT)) not in TABLES
        for line in reads(text, everywhere)
    ]
    assert not offenders, f"read BALANCE_* from the environment outside the tables: {offenders}"


def test_the_tables_exist_and_read_through_the_storage_layers_reader():
    for table in TABLES:
        assert (ROOT / table).is_file(), table
    assert reads((ROOT / "ingest/storage/settings.py").read_text(encoding="utf-8"))


def test_the_scan_sees_every_way_a_setting_is_read():
    """The scan can fail: each form below is one read."""
    source = """
import os
from os import environ, getenv
ENV = "BALANCE_A"
NAMES = {"x": "BALANCE_B"}

def f(kind, name, env=None):
    env = os.environ if env is None else env
    return (
        os.environ.get("BALANCE_C"),
        os.environ["BALANCE_D"],
        environ.get(ENV),
        getenv(f"BALANCE_{name}"),
        "BALANCE_E" in os.environ,
        env.get(NAMES[kind]),
        os.environ.get("BALANCE_" + name),
    )
"""
    assert len(reads(source)) == 7
    assert not reads('import os\nos.environ.get("XDG_CACHE_HOME")\nos.environ["BALANCE_X"] = "1"\n')


def test_the_app_factory_passes_the_chart_validation_setting_down(tmp_path, monkeypatch):
    """BALANCE_VALIDATE_CHARTS is read by the dashboard's table when the app is created (its
    config first, then the environment), not when dashboard.charts is first imported."""
    from dashboard import charts
    from ingest.server.app import close_app, create_app

    monkeypatch.setattr(charts, "VALIDATE", charts.VALIDATE)  # put back after
    monkeypatch.setenv("BALANCE_VALIDATE_CHARTS", "0")
    seen = []
    for n, given in enumerate(({"BALANCE_VALIDATE_CHARTS": "1"}, {})):
        conf = {"BALANCE_DB": str(tmp_path / f"{n}.duckdb"), "BALANCE_JOBS_INTERVAL": 0}
        app = create_app({**conf, "BALANCE_WORKERS": 0, **given})
        seen.append(charts.VALIDATE)
        close_app(app)
    assert seen == [True, False]


def test_a_tables_reader_parses_names_a_bad_value_and_takes_blank_for_unset():
    from ingest.storage import settings

    assert settings.value("MIN_FREE", {"BALANCE_MIN_FREE": "1MiB"}) == 1024 * 1024
    assert settings.value("MIN_FREE", {"BALANCE_MIN_FREE": "  "}) == 64 * 1024 * 1024
    assert settings.value("S3_USE_SSL", {"BALANCE_S3_USE_SSL": "false"}) is False
    assert settings.value("S3_USE_SSL", {}) is None  # unset: DuckDB's own default
    with pytest.raises(ValueError, match="BALANCE_MIN_FREE='lots'"):
        settings.value("MIN_FREE", {"BALANCE_MIN_FREE": "lots"})
